"""F2-catalyst-worker-init-fn-lambda (imports the real package).

catalyst.utils get_loaders_from_params sets the DataLoader's worker_init_fn to a lambda defined in the
function whenever the user gives none; with num_workers > 0 under spawn the loader cannot start its
workers. Fixed release: functools.partial of a module-level _worker_init_fn.

A Python 3.10+ shim restores the collections.MutableMapping aliases that these catalyst releases
import (unrelated to the bug).

Usage: python repro/F2-catalyst-worker-init-fn-lambda.py [buggy|fixed|VERSION]   (buggy 20.12, fixed 21.3)
"""
import os, sys, pickle
import _site
VER = _site.use("catalyst", _site.version(), "deps-catalyst", "deps-common")

import collections, collections.abc
for _n in ("MutableMapping", "Mapping", "Sequence", "Iterable", "Callable"):
    setattr(collections, _n, getattr(collections.abc, _n))

import multiprocessing as mp
import torch


def main():
    try:
        from catalyst.utils.loaders import get_loaders_from_params
    except ImportError:
        from catalyst.utils.data import get_loaders_from_params
    loaders = get_loaders_from_params(batch_size=2, num_workers=1,
                                      train=torch.utils.data.TensorDataset(torch.zeros(4, 1)))
    try:
        next(iter(loaders["train"]))            # starts a spawn worker: pickles dataset, collate_fn, worker_init_fn
    except (AttributeError, pickle.PicklingError) as e:
        print(f"BUG REPRODUCED: catalyst {VER}: loader from get_loaders_from_params cannot start spawn workers: {e}")
    else:
        print(f"FIXED: catalyst {VER}: loader from get_loaders_from_params runs with spawn workers")


if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)
    main()
