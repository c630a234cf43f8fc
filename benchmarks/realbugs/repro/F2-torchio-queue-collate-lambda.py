"""F2-torchio-queue-collate-lambda (imports the real package).

torchio.Queue builds its internal subjects DataLoader with `collate_fn=lambda x: x[0]` and the
user's num_workers; under spawn (Windows/macOS) starting the workers fails. Fixed release: a
static method `get_first_item` is the collate_fn.

Usage: python repro/F2-torchio-queue-collate-lambda.py [buggy|fixed|VERSION]   (buggy 0.18.20, fixed 0.18.21)
"""
import os, sys, pickle
import _site
VER = _site.use("torchio", _site.version(), "deps-torchio", "deps-common")

import multiprocessing as mp
import warnings
import torch


def main():
    import torchio as tio
    subject = tio.Subject(t1=tio.ScalarImage(tensor=torch.rand(1, 8, 8, 8)))
    dataset = tio.SubjectsDataset([subject, subject])
    warnings.simplefilter("ignore")
    try:
        queue = tio.Queue(dataset, max_length=4, samples_per_volume=2,
                          sampler=tio.data.UniformSampler(4), num_workers=1)
        queue[0]
    except (AttributeError, pickle.PicklingError) as e:
        print(f"BUG REPRODUCED: torchio {VER}: Queue(num_workers=1) cannot start spawn workers: {e}")
    else:
        print(f"FIXED: torchio {VER}: Queue(num_workers=1) loads patches with spawn workers")


if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)
    main()
