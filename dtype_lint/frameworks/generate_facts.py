"""Generate ``facts.json``, the frameworks' classes that dtype-lint knows without reading
the frameworks' source: which are torch modules, Flax modules and datasets, under every
dotted name they can be imported by.

    python -m dtype_lint.frameworks.generate_facts      # rewrites dtype_lint/frameworks/facts.json

Run it in an environment with the frameworks installed (torch, lightning, flax); it
imports their module and dataset packages, records each class defined or re-exported
there, and the versions it read. The linter never imports a framework: it reads the
bundled file (:mod:`dtype_lint.frameworks.facts`), so a finding does not depend on what is
installed beside it (pre-commit's environment holds no torch). ``tests/test_framework_facts.py``
checks the file against the installed versions.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import json
import pkgutil
import sys
from pathlib import Path

OUT = Path(__file__).with_name("facts.json")
# (distribution, the packages walked, the base classes and the kind each makes)
SOURCES = (
    ("torch", ("torch.nn", "torch.ao.nn", "torch.utils.data"),
     (("torch.nn.Module", "torch_module"), ("torch.utils.data.Dataset", "dataset"),
      ("torch.utils.data.IterableDataset", "dataset"))),
    ("lightning", ("lightning.pytorch.core", "lightning.pytorch.demos", "lightning.pytorch=", "lightning="),
     (("torch.nn.Module", "torch_module"), ("torch.utils.data.Dataset", "dataset"))),
    ("pytorch-lightning", ("pytorch_lightning.core", "pytorch_lightning.demos", "pytorch_lightning="),
     (("torch.nn.Module", "torch_module"), ("torch.utils.data.Dataset", "dataset"))),
    ("flax", ("flax.linen", "flax.nnx"),
     (("flax.linen.Module", "flax_module"), ("flax.nnx.Module", "flax_module"))),
)
# Modules whose import runs code of their own (tests, benchmarks, CUDA-only paths).
_SKIPPED = ("test", "_C", "cuda", "onnx", "backends")


def _resolve(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _modules(package: str):
    """The package and every module below it (``name=``: the package's own namespace only)."""
    root = importlib.import_module(package.rstrip("="))
    yield root
    if package.endswith("="):
        return
    for info in pkgutil.walk_packages(getattr(root, "__path__", []), prefix=package + "."):
        if any(part.startswith(_SKIPPED) for part in info.name.split(".")[len(package.split(".")):]):
            continue
        try:
            yield importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - an optional dependency missing: that module's classes are unknown
            continue


def collect() -> dict:
    kinds: dict[str, set[str]] = {}
    versions: dict[str, str] = {}
    for distribution, packages, bases in SOURCES:
        try:
            versions[distribution] = importlib.metadata.version(distribution)
            resolved = [(_resolve(base), kind) for base, kind in bases]
        except (importlib.metadata.PackageNotFoundError, ImportError, AttributeError):
            print(f"skipped {distribution}: not installed", file=sys.stderr)
            continue
        for package in packages:
            try:
                modules = list(_modules(package))
            except ImportError:
                continue
            for module in modules:
                for name, value in vars(module).items():
                    if not inspect.isclass(value) or name.startswith("__"):
                        continue
                    # A private name counts where the module defines it (`_Loss`, `_BatchNorm`).
                    if name.startswith("_") and value.__module__ != module.__name__:
                        continue
                    for base, kind in resolved:
                        if issubclass(value, base):
                            kinds.setdefault(kind, set()).add(f"{module.__name__}.{name}")
    return {"generated from": versions, **{kind: sorted(names) for kind, names in sorted(kinds.items())}}


def main() -> int:
    OUT.write_text(json.dumps(collect(), indent=0, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
