"""transformers: XGLM sinusoidal position table is built in float32 and added to the input
embeddings of a model loaded with from_pretrained(..., torch_dtype=torch.bfloat16).

Usage: python repro/F1-xglm-sinusoidal-positions-fp32.py [buggy|fixed|VERSION]   (buggy 4.23.1, fixed 4.24.0)
Imports the real package from $REALBUGS_SITE/transformers-<version> (+ tokenizers 0.13.3, huggingface_hub 0.16.4).
"""
import sys
import tempfile
import warnings
import _site

ver = _site.version()
_site.use("transformers", ver, "deps-tokenizers-0.13.3", "deps-hfhub-0.16.4", "deps-common")
warnings.filterwarnings("ignore")

import torch
from transformers import XGLMConfig, XGLMModel

torch.manual_seed(0)
cfg = XGLMConfig(vocab_size=64, max_position_embeddings=32, d_model=16, ffn_dim=32,
                 num_layers=1, attention_heads=2)
with tempfile.TemporaryDirectory() as d:
    XGLMModel(cfg).save_pretrained(d)
    model = XGLMModel.from_pretrained(d, torch_dtype=torch.bfloat16).eval()

ids = torch.randint(3, 64, (1, 6))
print(f"transformers {ver}: position table dtype {model.embed_positions.weights.dtype}, "
      f"embed_tokens dtype {model.embed_tokens.weight.dtype}")
try:
    with torch.no_grad():
        out = model(ids).last_hidden_state
except RuntimeError as e:
    print(f"BUG REPRODUCED: bf16 forward fails: {e}")
else:
    if out.dtype != torch.bfloat16:
        print(f"BUG REPRODUCED: bf16 model returns {out.dtype}")
    else:
        print(f"FIXED: bf16 forward returns {out.dtype}")
