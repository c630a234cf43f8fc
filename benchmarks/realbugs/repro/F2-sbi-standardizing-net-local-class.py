"""F2-sbi-standardizing-net-local-class (imports the real package).

sbi.utils.sbiutils.standardizing_net defines class Standardize inside the function and returns an
instance, which posterior_nn/likelihood_nn put into the density estimator when z-scoring x (the
default); the estimator and posterior cannot be pickled. Fixed release: module-level Standardize.

Usage: python repro/F2-sbi-standardizing-net-local-class.py [buggy|fixed|VERSION]   (buggy 0.9.0, fixed 0.10.0)
"""
import os, sys, io, pickle
import _site
VER = _site.use("sbi", _site.version(), "deps-sbi", "deps-common")

import torch
from sbi.utils import posterior_nn

net = posterior_nn("maf")(torch.randn(50, 2), torch.randn(50, 3))
try:
    torch.save(net, io.BytesIO())
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: sbi {VER}: torch.save(MAF density estimator) fails: {e}")
else:
    print(f"FIXED: sbi {VER}: MAF density estimator saves")
