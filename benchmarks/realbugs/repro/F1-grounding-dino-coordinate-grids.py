"""Reproduction for F1-grounding-dino-coordinate-grids (transformers, real package).

Grounding DINO builds its encoder reference-point grid and its two-stage
proposal grid with torch.linspace(..., dtype=torch.float32), derives the valid
ratios with `.float()` and then `valid_ratios = valid_ratios.float()` in
forward. With a bf16 model the float32 coordinates reach grid_sample in the
multi-scale deformable attention next to bf16 values, which raises.

Usage: python repro/F1-grounding-dino-coordinate-grids.py [buggy|fixed|VERSION]   (buggy 5.16.1, fixed 5.17.0)
"""
import _site
_site.use("transformers", _site.version(), "deps-hf5", "deps-common")

import torch
import transformers
from transformers import BertConfig, GroundingDinoConfig, GroundingDinoModel, ResNetConfig

print("transformers", transformers.__version__)
torch.manual_seed(0)
backbone = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1],
                        out_features=["stage2", "stage3", "stage4"])
text = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=64)
cfg = GroundingDinoConfig(backbone_config=backbone, use_timm_backbone=False, use_pretrained_backbone=False,
                          backbone=None, text_config=text, d_model=32, encoder_layers=1, decoder_layers=1,
                          encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                          decoder_ffn_dim=32, num_queries=5, encoder_n_points=2, decoder_n_points=2,
                          num_feature_levels=4, max_text_len=16)
model = GroundingDinoModel(cfg).eval().to(torch.bfloat16)
pixels = torch.randn(1, 3, 128, 128, dtype=torch.bfloat16)
ids = torch.tensor([[1, 5, 6, 7, 2]])
try:
    with torch.no_grad():
        out = model(pixel_values=pixels, input_ids=ids, attention_mask=torch.ones_like(ids))
except RuntimeError as e:
    print(f"BUG REPRODUCED: bf16 forward raises: {e}")
else:
    if out.last_hidden_state.dtype != torch.bfloat16:
        print(f"BUG REPRODUCED: bf16 forward returned {out.last_hidden_state.dtype}")
    else:
        print("FIXED: bf16 forward runs and returns", out.last_hidden_state.dtype)
