"""F2-transformers-linear-warmup-lr-lambda (imports the real package).

get_linear_schedule_with_warmup builds its LambdaLR around a function defined inside the factory, so
the returned scheduler (and any LightningModule/module that keeps it, e.g. under ddp_spawn or
torch.save) cannot be pickled. Fixed release: the schedule is a functools.partial of a module-level
function.

Usage: python repro/F2-transformers-linear-warmup-lr-lambda.py [buggy|fixed|VERSION]   (buggy 4.26.1, fixed 4.27.0)
"""
import os, sys, pickle
import _site
VER = _site.use("transformers", _site.version(), "deps-tokenizers-0.13.3", "deps-hfhub-0.16.4", "deps-common")

import torch
from transformers.optimization import get_linear_schedule_with_warmup

holder = torch.nn.Module()                      # stands for the LightningModule that keeps the scheduler
holder.head = torch.nn.Linear(2, 2)
opt = torch.optim.AdamW(holder.head.parameters(), lr=1e-3)
holder.lr_scheduler = get_linear_schedule_with_warmup(opt, num_warmup_steps=10, num_training_steps=100)
try:
    pickle.dumps(holder)
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: transformers {VER}: module holding the linear-warmup LambdaLR is not picklable: {e}")
else:
    print(f"FIXED: transformers {VER}: module holding the linear-warmup LambdaLR pickles")
