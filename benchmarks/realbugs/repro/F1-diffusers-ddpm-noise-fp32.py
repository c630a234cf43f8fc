"""diffusers: DDPMPipeline draws its starting noise with randn_tensor(...) and no dtype (torch's
default float32) and feeds it to a half-precision UNet2DModel.

Usage: python repro/F1-diffusers-ddpm-noise-fp32.py [buggy|fixed|VERSION]   (buggy 0.30.3, fixed 0.31.0)
Imports the real package from $REALBUGS_SITE/diffusers-<version> (+ huggingface_hub 0.25.2).
fp16 is used (the upstream report's dtype); CPU fp16 conv is available in torch 2.13.
"""
import sys
import warnings
import _site

ver = _site.version()
_site.use("diffusers", ver, "deps-hfhub-0.25.2", "deps-common")
warnings.filterwarnings("ignore")

import torch
from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel
from diffusers.utils import logging as dlog

dlog.set_verbosity_error()
torch.manual_seed(0)
unet = UNet2DModel(
    sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
    block_out_channels=(32, 32), down_block_types=("DownBlock2D", "DownBlock2D"),
    up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=8,
).to(torch.float16).eval()
pipe = DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=10))
pipe.set_progress_bar_config(disable=True)
try:
    out = pipe(batch_size=1, num_inference_steps=1, output_type="np").images
except RuntimeError as e:
    print(f"BUG REPRODUCED: fp16 DDPMPipeline fails on its float32 starting noise: {e}")
else:
    print(f"FIXED: fp16 pipeline ran, image array {out.dtype} {out.shape}")
