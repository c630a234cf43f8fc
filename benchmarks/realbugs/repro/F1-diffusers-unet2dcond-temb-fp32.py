"""diffusers: UNet2DConditionModel feeds the float32 output of get_timestep_embedding (the
Timesteps projection) into its half-precision TimestepEmbedding without a cast.

Usage: python repro/F1-diffusers-unet2dcond-temb-fp32.py [buggy|fixed|VERSION]   (buggy 0.3.0, fixed 0.4.0)
Imports the real package from $REALBUGS_SITE/diffusers-<version> (+ huggingface_hub 0.16.4).
"""
import sys
import warnings
import _site

ver = _site.version()
_site.use("diffusers", ver, "deps-hfhub-0.16.4", "deps-common")
warnings.filterwarnings("ignore")

import torch
from diffusers import UNet2DConditionModel

torch.manual_seed(0)
unet = UNet2DConditionModel(
    sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
    block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
    up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32, attention_head_dim=8,
).to(torch.bfloat16).eval()
sample = torch.randn(1, 4, 8, 8, dtype=torch.bfloat16)
ctx = torch.randn(1, 4, 32, dtype=torch.bfloat16)
try:
    with torch.no_grad():
        out = unet(sample, 10, encoder_hidden_states=ctx).sample
except RuntimeError as e:
    print(f"BUG REPRODUCED: bf16 UNet2DConditionModel forward fails at the time embedding: {e}")
else:
    print(f"FIXED: bf16 forward returns {out.dtype}")
