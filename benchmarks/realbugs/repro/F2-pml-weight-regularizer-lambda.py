"""F2-pml-weight-regularizer-lambda (imports the real package).

WeightRegularizerMixin.__init__ stores `(lambda x: 0)` as self.regularizer when no regularizer is
passed, so ArcFaceLoss / NormalizedSoftmaxLoss / proxy losses (nn.Modules with trainable weights)
cannot be pickled for DDP spawn or torch.save. Fixed release: None is stored and checked at use.

Usage: python repro/F2-pml-weight-regularizer-lambda.py [buggy|fixed|VERSION]   (buggy 0.9.70, fixed 0.9.72)
"""
import os, sys, io, pickle
import _site
VER = _site.use("pytorch-metric-learning", _site.version())

import torch
from pytorch_metric_learning import losses

loss = losses.ArcFaceLoss(margin=28.6, num_classes=10, embedding_size=8)
try:
    torch.save(loss, io.BytesIO())
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: pytorch-metric-learning {VER}: torch.save(ArcFaceLoss) fails: {e}")
else:
    print(f"FIXED: pytorch-metric-learning {VER}: ArcFaceLoss saves")
