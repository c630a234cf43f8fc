"""Reproduction for F1-deformable-detr-reference-points-grid (transformers, real package).

Deformable DETR's encoder builds its reference-point grid with
torch.linspace(..., dtype=torch.float32) and computes the valid ratios with
an integer-sum `.float()`; both ignore the activations' dtype, so a bf16 model
gets a float32 coordinate table that is then fed to the sampling offsets.

Usage: python repro/F1-deformable-detr-reference-points-grid.py [buggy|fixed|VERSION]   (buggy 4.37.2, fixed 4.38.0)
"""
import _site
_site.use("transformers", _site.version(), "deps-hf4-tok0.15", "deps-common")

import sys
import torch
import transformers
from transformers.models.deformable_detr import modeling_deformable_detr as mdd

print("transformers", transformers.__version__)
valid_ratios = torch.ones(1, 2, 2, dtype=torch.bfloat16)          # what a bf16 model would pass
spatial_shapes = torch.tensor([[4, 4], [2, 2]])
ref = mdd.DeformableDetrEncoder.get_reference_points(spatial_shapes, valid_ratios, device="cpu")

# get_valid_ratio on a padding mask, asking for the activations' dtype where the API allows it
mask = torch.ones(1, 4, 4, dtype=torch.long)
import inspect
sig = inspect.signature(mdd.DeformableDetrModel.get_valid_ratio)
kw = {"dtype": torch.bfloat16} if "dtype" in sig.parameters else {}
vr = mdd.DeformableDetrModel.get_valid_ratio(None, mask, **kw)

print("reference_points dtype:", ref.dtype, "| valid_ratio dtype:", vr.dtype)
if ref.dtype == torch.float32 or vr.dtype == torch.float32:
    print(f"BUG REPRODUCED: bf16 valid ratios give a {ref.dtype} reference-point grid "
          f"and get_valid_ratio returns {vr.dtype}")
    sys.exit(0)
print("FIXED: reference points and valid ratios follow the activations' dtype (bfloat16)")
