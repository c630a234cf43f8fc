"""F2-deepctr-torch-acc-metric-lambda (imports the real package).

BaseModel.compile(metrics=["acc"]) stores `lambda y_true, y_pred: accuracy_score(...)` in
self.metrics of the model (an nn.Module), so torch.save(model) fails after compile. Fixed release:
a method `_accuracy_score` is stored.

deepctr_torch imports Keras callback classes from TensorFlow at import time; placeholder classes
stand in for them (they play no part in the bug).

Usage: python repro/F2-deepctr-torch-acc-metric-lambda.py [buggy|fixed|VERSION]   (buggy 0.2.7, fixed 0.2.8)
"""
import os, sys, io, pickle, types
import _site
VER = _site.use("deepctr-torch", _site.version(), "deps-sklearn", "deps-common")

import torch
import sklearn.metrics, torch._dynamo  # loaded first: both probe for an installed TensorFlow

_cb = types.ModuleType("tensorflow.python.keras.callbacks")
for _n in ("EarlyStopping", "ModelCheckpoint", "History", "CallbackList"):
    setattr(_cb, _n, type(_n, (), {"__module__": _cb.__name__}))
for _name in ("tensorflow", "tensorflow.python", "tensorflow.python.keras"):
    sys.modules.setdefault(_name, types.ModuleType(_name))
sys.modules["tensorflow.python.keras.callbacks"] = _cb

from deepctr_torch.inputs import DenseFeat
from deepctr_torch.models import DeepFM

feats = [DenseFeat("d0", 1), DenseFeat("d1", 1)]
model = DeepFM(feats, feats, device="cpu")
model.compile("adam", "binary_crossentropy", metrics=["acc"])
try:
    torch.save(model, io.BytesIO())
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: deepctr-torch {VER}: torch.save(model) after compile(metrics=['acc']) fails: {e}")
else:
    print(f"FIXED: deepctr-torch {VER}: compiled model saves")
