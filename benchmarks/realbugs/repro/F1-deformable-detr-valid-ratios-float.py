"""Reproduction for F1-deformable-detr-valid-ratios-float (transformers, real package).

DeformableDetrModel.forward computes valid_ratios in the activations' dtype and
then immediately does `valid_ratios = valid_ratios.float()`. The float32 ratios
make the reference points float32, the sampling locations float32, and the
pure-PyTorch multi-scale deformable attention calls grid_sample(bf16 value,
float32 grid), which raises.

Usage: python repro/F1-deformable-detr-valid-ratios-float.py [buggy|fixed|VERSION]   (buggy 4.38.2, fixed 4.39.0)
"""
import _site
_site.use("transformers", _site.version(), "deps-hf4-tok0.15", "deps-common")

import torch
import transformers
from transformers import DeformableDetrConfig, DeformableDetrModel, ResNetConfig

print("transformers", transformers.__version__)
torch.manual_seed(0)
backbone = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1],
                        out_features=["stage2", "stage3", "stage4"])
cfg = DeformableDetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
                           backbone=None, d_model=32, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                           decoder_ffn_dim=32, num_queries=5, encoder_n_points=2, decoder_n_points=2,
                           num_feature_levels=4, two_stage=False, with_box_refine=False)
model = DeformableDetrModel(cfg).eval().to(torch.bfloat16)
pixels = torch.randn(1, 3, 128, 128, dtype=torch.bfloat16)
try:
    with torch.no_grad():
        out = model(pixel_values=pixels)
except RuntimeError as e:
    print(f"BUG REPRODUCED: bf16 forward raises: {e}")
else:
    if out.last_hidden_state.dtype != torch.bfloat16:
        print(f"BUG REPRODUCED: bf16 forward returned {out.last_hidden_state.dtype}")
    else:
        print("FIXED: bf16 forward runs and returns", out.last_hidden_state.dtype)
