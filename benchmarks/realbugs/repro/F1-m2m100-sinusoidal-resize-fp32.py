"""transformers: M2M100SinusoidalPositionalEmbedding rebuilds its table in float32 when a longer
input arrives in forward (get_embedding uses dtype=torch.float) and only moves it to the old
table's device, so a bf16 model adds a float32 position table to bf16 embeddings.

Usage: python repro/F1-m2m100-sinusoidal-resize-fp32.py [buggy|fixed|VERSION]   (buggy 4.10.3, fixed 4.11.0)
Imports the real package from $REALBUGS_SITE/transformers-<version> (+ sacremoses, huggingface_hub 0.16.4;
tokenizers is left out, which these releases allow).
"""
import sys
import warnings
import _site

ver = _site.version()
_site.use("transformers", ver, "deps-sacremoses", "deps-hfhub-0.16.4", "deps-common")
warnings.filterwarnings("ignore")

import torch
from transformers import M2M100Config, M2M100Model

torch.manual_seed(0)
cfg = M2M100Config(vocab_size=64, d_model=16, encoder_layers=1, decoder_layers=1,
                   encoder_attention_heads=2, decoder_attention_heads=2,
                   encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=8)
model = M2M100Model(cfg).to(torch.bfloat16).eval()
enc = model.encoder
ids = torch.randint(4, 64, (1, 20))  # longer than max_position_embeddings: the table is rebuilt in forward
try:
    with torch.no_grad():
        out = enc(input_ids=ids).last_hidden_state
except RuntimeError as e:
    print(f"BUG REPRODUCED: bf16 encoder forward fails after the position table is rebuilt "
          f"({enc.embed_positions.weights.dtype}): {e}")
else:
    tbl = enc.embed_positions.weights.dtype
    if out.dtype != torch.bfloat16 or tbl != torch.bfloat16:
        print(f"BUG REPRODUCED: rebuilt table {tbl}, output {out.dtype}")
    else:
        print(f"FIXED: rebuilt table {tbl}, output {out.dtype}")
