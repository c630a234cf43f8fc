"""F2-transformers-constant-schedule-lambda (imports the real package).

get_constant_schedule passes an inline `lambda _: 1` to LambdaLR, so the scheduler it returns cannot be
pickled (multi-GPU spawn, checkpointing a module/trainer that keeps it). Fixed release: a module-level
helper function replaces the lambda.

Usage: python repro/F2-transformers-constant-schedule-lambda.py [buggy|fixed|VERSION]   (buggy 4.29.2, fixed 4.30.0)
"""
import os, sys, pickle
import _site
VER = _site.use("transformers", _site.version(), "deps-tokenizers-0.13.3", "deps-hfhub-0.16.4", "deps-common")

import torch
from transformers.optimization import get_constant_schedule

holder = torch.nn.Module()
holder.head = torch.nn.Linear(2, 2)
holder.lr_scheduler = get_constant_schedule(torch.optim.SGD(holder.head.parameters(), lr=0.1))
try:
    pickle.dumps(holder)
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: transformers {VER}: module holding the constant LambdaLR is not picklable: {e}")
else:
    print(f"FIXED: transformers {VER}: module holding the constant LambdaLR pickles")
