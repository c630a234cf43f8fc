"""diffusers: UNet2DModel passes the float32 sinusoidal timestep projection straight into its
half-precision TimestepEmbedding (no cast to the model dtype).

Usage: python repro/F1-diffusers-unet2d-temb-fp32.py [buggy|fixed|VERSION]   (buggy 0.7.0, fixed 0.8.0)
Imports the real package from $REALBUGS_SITE/diffusers-<version> (+ accelerate 0.14.0, huggingface_hub 0.16.4).
"""
import sys
import warnings
import _site

ver = _site.version()
_site.use("diffusers", ver, "deps-accelerate-0.14.0", "deps-hfhub-0.16.4", "deps-common")
warnings.filterwarnings("ignore")

import torch
from diffusers import UNet2DModel

torch.manual_seed(0)
unet = UNet2DModel(
    sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
    block_out_channels=(32, 32), down_block_types=("DownBlock2D", "DownBlock2D"),
    up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=8,
).to(torch.bfloat16).eval()
sample = torch.randn(1, 3, 8, 8, dtype=torch.bfloat16)
try:
    with torch.no_grad():
        out = unet(sample, 10).sample
except RuntimeError as e:
    print(f"BUG REPRODUCED: bf16 UNet2DModel forward fails at the time embedding: {e}")
else:
    print(f"FIXED: bf16 forward returns {out.dtype}")
