"""F2-pytorch-tabular-node-sparsemax-lambda (imports the real modules).

pytorch_tabular.models.node.utils defines sparsemax / sparsemoid / entmax15 as module-level lambdas
(their __qualname__ is "<lambda>", so pickle cannot find them by name); ODST keeps them as
choice_function / bin_function (defaults, or entmax15/entmoid15 from the NODE config), so a NODE
model cannot be saved. Fixed release: they are `def` functions.

The real odst.py/utils.py are imported; their parent packages are registered as bare namespaces so
pytorch_tabular/__init__.py (pytorch_lightning, omegaconf, pandas, ...) is not executed.

Usage: python repro/F2-pytorch-tabular-node-sparsemax-lambda.py [buggy|fixed|VERSION]   (buggy 0.4.0, fixed 0.5.0)
"""
import os, sys, io, pickle, types, importlib
import _site
VER = _site.use("pytorch_tabular", _site.version())

import torch

_root = sys.path[0]
for _name in ("pytorch_tabular", "pytorch_tabular.models", "pytorch_tabular.models.node"):
    _m = types.ModuleType(_name); _m.__path__ = [os.path.join(_root, *_name.split("."))]
    sys.modules[_name] = _m
odst = importlib.import_module("pytorch_tabular.models.node.odst")

layer = odst.ODST(in_features=4, num_trees=2, depth=2)
try:
    torch.save(layer, io.BytesIO())
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: pytorch_tabular {VER}: torch.save(ODST layer) fails: {e}")
else:
    print(f"FIXED: pytorch_tabular {VER}: ODST layer saves")
