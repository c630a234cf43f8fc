"""rotary-embedding-torch: xpos scale table stays float32 under bf16 queries/keys.

Usage: python repro/F1-rotary-xpos-scale-fp32.py [buggy|fixed|VERSION]   (buggy 0.2.3, fixed 0.2.4)
Imports the real package from $REALBUGS_SITE/rotary-embedding-torch-<version>.
"""
import sys
import _site

ver = _site.version()
_site.use("rotary-embedding-torch", ver, "deps-common")

import torch
from rotary_embedding_torch import RotaryEmbedding

rot = RotaryEmbedding(dim=16, use_xpos=True).to(torch.bfloat16)
q = torch.randn(1, 2, 8, 16, dtype=torch.bfloat16)
k = torch.randn(1, 2, 8, 16, dtype=torch.bfloat16)
rq, rk = rot.rotate_queries_and_keys(q, k)
print(f"rotary-embedding-torch {ver}: q {q.dtype} -> rotated q {rq.dtype}, rotated k {rk.dtype}")
if rq.dtype != torch.bfloat16 or rk.dtype != torch.bfloat16:
    print(f"BUG REPRODUCED: bf16 queries/keys come back as {rq.dtype} (xpos scale built from an integer arange / scale_base is float32)")
else:
    print("FIXED: rotated queries/keys keep bfloat16")
