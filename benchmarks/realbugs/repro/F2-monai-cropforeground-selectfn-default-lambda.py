"""F2-monai-cropforeground-selectfn-default-lambda (imports the real package).

CropForeground / CropForegroundd default `select_fn` is `lambda x: x > 0`, kept on the transform; a
monai Dataset holding the transform is pickled for every DataLoader worker under spawn (Windows,
macOS, CUDA subprocesses), which fails. Fixed release: the default is the module-level `is_positive`.

Usage: python repro/F2-monai-cropforeground-selectfn-default-lambda.py [buggy|fixed|VERSION]   (buggy 0.5.3, fixed 0.6.0)
"""
import os, sys, pickle
import _site
VER = _site.use("monai", _site.version())

import numpy as np
from monai.data import Dataset
from monai.transforms import Compose, CropForegroundd

data = [{"img": np.ones((1, 4, 4), dtype=np.float32)}]
ds = Dataset(data, transform=Compose([CropForegroundd(keys="img", source_key="img")]))
try:
    pickle.dumps(ds)                            # what DataLoader(num_workers>0) does per worker under spawn
except (AttributeError, pickle.PicklingError) as e:
    print(f"BUG REPRODUCED: monai {VER}: dataset with default CropForegroundd is not picklable: {e}")
else:
    print(f"FIXED: monai {VER}: dataset with default CropForegroundd pickles")
