"""F2-monai-deepgrow-spatialcropforeground-lambda (imports the real package).

monai.apps.deepgrow.transforms.SpatialCropForegroundd has the default `select_fn=lambda x: x > 0`,
kept on the transform, so a dataset using it cannot go to spawn DataLoader workers. Fixed release:
default is `is_positive`.

Usage: python repro/F2-monai-deepgrow-spatialcropforeground-lambda.py [buggy|fixed|VERSION]   (buggy 0.7.0, fixed 0.8.0)
"""
import os, sys, pickle
import _site
VER = _site.use("monai", _site.version())

import numpy as np
from monai.data import Dataset
from monai.transforms import Compose
from monai.apps.deepgrow.transforms import SpatialCropForegroundd

data = [{"image": np.ones((1, 8, 8), dtype=np.float32), "label": np.ones((1, 8, 8), dtype=np.float32)}]
ds = Dataset(data, transform=Compose([SpatialCropForegroundd(keys=["image"], source_key="label", spatial_size=[4, 4])]))
try:
    pickle.dumps(ds)
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: monai {VER}: dataset with default SpatialCropForegroundd is not picklable: {e}")
else:
    print(f"FIXED: monai {VER}: dataset with default SpatialCropForegroundd pickles")
