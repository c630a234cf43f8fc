"""F2-normflows-made-preprocessing-lambda (imports the real package).

normflows.nets.MADE stores `self.preprocessing = lambda inputs: inputs` when no preprocessing is
given (the default used by the autoregressive spline flows), so any flow model containing a MADE
cannot be torch.saved or sent to spawn workers. Fixed release: torch.nn.Identity().

Usage: python repro/F2-normflows-made-preprocessing-lambda.py [buggy|fixed|VERSION]   (buggy 1.7.1, fixed 1.7.2)
"""
import os, sys, io, pickle
import _site
VER = _site.use("normflows", _site.version())

import torch
import normflows as nf

flows = [nf.flows.AutoregressiveRationalQuadraticSpline(2, 1, 8), nf.flows.LULinearPermute(2)]
model = nf.NormalizingFlow(nf.distributions.DiagGaussian(2, trainable=False), flows)
try:
    torch.save(model, io.BytesIO())
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: normflows {VER}: torch.save(NormalizingFlow with MADE) fails: {e}")
else:
    print(f"FIXED: normflows {VER}: flow model with MADE saves")
