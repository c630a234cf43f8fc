"""F2-sbi-standardize-inputs-local-class (imports the real package).

sbi.neural_nets.classifier.build_input_layer defines class StandardizeInputs inside the function and
puts an instance at the head of every SNRE classifier; the classifier (and the posterior that holds
it) cannot be torch.saved. Fixed release: the class is module-level.

Usage: python repro/F2-sbi-standardize-inputs-local-class.py [buggy|fixed|VERSION]   (buggy 0.11.1, fixed 0.11.2)
"""
import os, sys, io, pickle
import _site
VER = _site.use("sbi", _site.version(), "deps-sbi", "deps-common")

import torch
from sbi.utils import classifier_nn

net = classifier_nn("mlp")(torch.randn(20, 3), torch.randn(20, 2))
try:
    torch.save(net, io.BytesIO())
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: sbi {VER}: torch.save(SNRE classifier) fails: {e}")
else:
    print(f"FIXED: sbi {VER}: SNRE classifier saves")
