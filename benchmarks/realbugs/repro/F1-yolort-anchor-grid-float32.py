"""Reproduction for F1-yolort-anchor-grid-float32 (yolort, real module).

yolort's AnchorGenerator.grid_anchors builds the anchor shift grid with
torch.arange(..., dtype=torch.float32) while the two weight tensors in the same
forward use the feature maps' dtype, so a half-precision model gets back
(float32 anchors, half wh_weights, half xy_weights) (issue zhiqwang/yolort#107).
The box decoder then adds the float32 anchors to the half head output and the
predictions are promoted to float32.

The package __init__ pulls torchvision; we load only yolort/models/anchor_utils.py
(which imports nothing but torch) from $REALBUGS_SITE/yolort-<version>.

Usage: python repro/F1-yolort-anchor-grid-float32.py [buggy|fixed|VERSION]   (buggy 0.4.0, fixed 0.5.0)
"""
import _site

ver = _site.version()
mod = _site.load_module("yolort", ver, "yolort/models/anchor_utils.py", "yolort_anchor_utils")

import torch

print("yolort", ver)

gen = mod.AnchorGenerator(strides=[8, 16, 32],
                          anchor_grids=[[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119], [116, 90, 156, 198, 373, 326]])
feats = [torch.randn(1, 8, s, s, dtype=torch.bfloat16) for s in (8, 4, 2)]
anchors, wh_weights, xy_weights = gen(feats)
print("anchors:", anchors.dtype, "| wh_weights:", wh_weights.dtype, "| xy_weights:", xy_weights.dtype)
# same arithmetic the library's box decoder does with this tuple
rel = torch.rand(anchors.shape[0], 2, dtype=torch.bfloat16)
pred_xy = (rel * 2.0 + anchors) * wh_weights
if anchors.dtype == torch.float32:
    print(f"BUG REPRODUCED: bf16 feature maps give float32 anchors; decoded centres come out {pred_xy.dtype}")
else:
    print(f"FIXED: anchors follow the feature maps ({anchors.dtype}); decoded centres {pred_xy.dtype}")
