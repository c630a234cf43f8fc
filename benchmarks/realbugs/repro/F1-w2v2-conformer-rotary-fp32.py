"""transformers: Wav2Vec2Conformer rotary position table is returned in float32 while the
encoder runs in bf16 (model loaded with from_pretrained(..., torch_dtype=torch.bfloat16)).

Usage: python repro/F1-w2v2-conformer-rotary-fp32.py [buggy|fixed|VERSION]   (buggy 4.33.0, fixed 4.34.0)
Imports the real package from $REALBUGS_SITE/transformers-<version> (+ tokenizers, huggingface_hub).
"""
import sys
import tempfile
import warnings
import _site

ver = _site.version()
_site.use("transformers", ver, "deps-tokenizers-0.13.3" if ver.startswith("4.33") else "deps-tokenizers-0.14.1",
          "deps-hfhub-0.16.4", "deps-common")
warnings.filterwarnings("ignore")

import torch
from transformers import Wav2Vec2ConformerConfig, Wav2Vec2ConformerModel

torch.manual_seed(0)
cfg = Wav2Vec2ConformerConfig(
    hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
    conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
    num_conv_pos_embedding_groups=2, position_embeddings_type="rotary", conv_depthwise_kernel_size=3,
)
with tempfile.TemporaryDirectory() as d:
    Wav2Vec2ConformerModel(cfg).save_pretrained(d)
    model = Wav2Vec2ConformerModel.from_pretrained(d, torch_dtype=torch.bfloat16).eval()

audio = torch.randn(1, 400, dtype=torch.bfloat16)
rot = model.encoder.embed_positions
table = rot(torch.zeros(1, 20, 16, dtype=torch.bfloat16))
print(f"transformers {ver}: rotary table dtype {table.dtype} for bf16 hidden states")
try:
    with torch.no_grad():
        out = model(audio).last_hidden_state
except RuntimeError as e:
    print(f"BUG REPRODUCED: bf16 forward fails: {e}")
else:
    if out.dtype != torch.bfloat16 or table.dtype != torch.bfloat16:
        print(f"BUG REPRODUCED: rotary table {table.dtype}, output {out.dtype} for a bf16 model")
    else:
        print(f"FIXED: rotary table and output are {out.dtype}")
