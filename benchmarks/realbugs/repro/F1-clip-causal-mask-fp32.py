"""transformers: CLIPTextTransformer builds its causal attention mask with torch.empty(...) and no
dtype (float32) and adds it to half-precision attention scores.

Usage: python repro/F1-clip-causal-mask-fp32.py [buggy|fixed|VERSION]   (buggy 4.20.1, fixed 4.21.0)
Imports the real package from $REALBUGS_SITE/transformers-<version> (+ huggingface_hub 0.16.4;
tokenizers is left out, which these releases allow).
"""
import sys
import warnings
import _site

ver = _site.version()
_site.use("transformers", ver, "deps-hfhub-0.16.4", "deps-common")
warnings.filterwarnings("ignore")

import torch
from transformers import CLIPTextConfig, CLIPTextModel

torch.manual_seed(0)
cfg = CLIPTextConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                     num_attention_heads=2, max_position_embeddings=16)
model = CLIPTextModel(cfg).to(torch.bfloat16).eval()
ids = torch.randint(0, 64, (1, 7))
try:
    with torch.no_grad():
        out = model(ids).last_hidden_state
except RuntimeError as e:
    print(f"BUG REPRODUCED: bf16 CLIPTextModel forward fails: {e}")
else:
    if out.dtype != torch.bfloat16:
        print(f"BUG REPRODUCED: bf16 model returns {out.dtype}")
    else:
        print(f"FIXED: bf16 forward returns {out.dtype}")
