"""F2-monai-generalized-dice-wfunc-lambda (imports the real package).

GeneralizedDiceLoss.__init__ stores `lambda x: torch.reciprocal(x * x)` as self.w_func for the default
w_type="square", so the loss module cannot be pickled / torch.saved / sent to spawn workers. Fixed
release: w_func is a method that branches on self.w_type.

Usage: python repro/F2-monai-generalized-dice-wfunc-lambda.py [buggy|fixed|VERSION]   (buggy 0.4.0, fixed 0.5.0)
"""
import os, sys, io, pickle
import _site
VER = _site.use("monai", _site.version())

import torch
from monai.losses import GeneralizedDiceLoss

loss = GeneralizedDiceLoss(softmax=True)        # default w_type is "square"
try:
    torch.save(loss, io.BytesIO())
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: monai {VER}: torch.save(GeneralizedDiceLoss()) fails: {e}")
else:
    print(f"FIXED: monai {VER}: GeneralizedDiceLoss saves")
