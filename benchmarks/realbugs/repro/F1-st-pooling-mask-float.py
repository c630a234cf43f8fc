"""sentence-transformers: Pooling builds the expanded attention mask with .float(), so mean
pooling of half-precision token embeddings returns float32 and a following half layer fails.

Usage: python repro/F1-st-pooling-mask-float.py [buggy|fixed|VERSION]   (buggy 2.3.1, fixed 2.4.0)
Loads the real sentence_transformers/models/Pooling.py from $REALBUGS_SITE/sentence-transformers-<version>
by file path (that module only needs torch; the package __init__ pulls in sklearn/transformers).
"""
import _site

ver = _site.version()
mod = _site.load_module("sentence-transformers", ver, "sentence_transformers/models/Pooling.py", "st_pooling")

import torch

pool = mod.Pooling(8, pooling_mode="mean").to(torch.bfloat16)
dense = torch.nn.Linear(8, 4).to(torch.bfloat16)  # what models.Dense holds after model.half()/bf16
feats = {"token_embeddings": torch.randn(2, 5, 8, dtype=torch.bfloat16),
         "attention_mask": torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])}
emb = pool(feats)["sentence_embedding"]
print(f"sentence-transformers {ver}: bf16 token embeddings -> sentence_embedding {emb.dtype}")
try:
    dense(emb)
except RuntimeError as e:
    print(f"BUG REPRODUCED: pooled embedding is {emb.dtype}; the next bf16 layer fails: {e}")
else:
    print(f"FIXED: pooled embedding stays {emb.dtype} and feeds the bf16 layer")
