"""diffusers: UNet2DConditionModel with class_embed_type="timestep" feeds the float32
sinusoidal projection of the class labels into a half-precision TimestepEmbedding.

Usage: python repro/F1-diffusers-class-timestep-proj-fp32.py [buggy|fixed|VERSION]   (buggy 0.15.1, fixed 0.16.0)
Imports the real package from $REALBUGS_SITE/diffusers-<version> (+ huggingface_hub 0.16.4).
"""
import sys
import _site

ver = _site.version()
_site.use("diffusers", ver, "deps-hfhub-0.16.4", "deps-common")

import torch
from diffusers import UNet2DConditionModel

torch.manual_seed(0)
unet = UNet2DConditionModel(
    sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
    block_out_channels=(32, 32), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
    up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
    attention_head_dim=8, norm_num_groups=8, class_embed_type="timestep",
).to(torch.bfloat16).eval()
sample = torch.randn(1, 4, 8, 8, dtype=torch.bfloat16)
ctx = torch.randn(1, 4, 32, dtype=torch.bfloat16)
try:
    with torch.no_grad():
        out = unet(sample, 10, encoder_hidden_states=ctx, class_labels=torch.tensor([3])).sample
except RuntimeError as e:
    print(f"BUG REPRODUCED: bf16 UNet forward with class_embed_type='timestep' fails: {e}")
else:
    print(f"FIXED: bf16 forward returns {out.dtype}")
