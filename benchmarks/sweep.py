"""Sweep real code: lint every .py file of the installed torch, jax and flax packages and
of the labelled corpus, and account for every file (linted, or reported with a reason).

    python benchmarks/sweep.py [--corpus DIR] [--packages torch jax flax]

Fails (exit 1) on any internal error or any file neither linted nor reported.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import sys
import time
from pathlib import Path

from dtype_lint.project.config import Config
from dtype_lint.project.file_lint import INTERNAL_ERROR
from dtype_lint.project.runner import lint_paths


def package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def python_files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*.py") if p.is_file() or p.is_symlink())


def sweep(name: str, root: Path, jobs: int) -> bool:
    files = python_files(root)
    start = time.perf_counter()
    # Every file is named explicitly, so excludes (site-packages, build...) do not apply.
    results = lint_paths(files, Config(), jobs=jobs)
    elapsed = time.perf_counter() - start
    by_path = {r.path: r for r in results}
    missing = [f for f in files if f not in by_path]
    errors = [r.error for r in results if r.error]
    internal = [e for e in errors if e.reason.startswith(INTERNAL_ERROR)]
    findings = collections.Counter(f.code for r in results for f in r.findings)
    print(f"{name:<8} {len(files):>6} files  {len(results) - len(errors):>6} linted  "
          f"{len(errors):>4} reported  {len(internal)} internal errors  {len(missing)} unaccounted  "
          f"{sum(findings.values()):>5} findings  {elapsed:7.1f} s")
    for error in errors:
        print(f"    {error.path}: {error.reason}")
    if findings:
        print("    " + ", ".join(f"{code} {n}" for code, n in sorted(findings.items())))
    return not internal and not missing


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--packages", nargs="*", default=["torch", "jax", "flax"])
    parser.add_argument("--corpus", help="the unpacked labelled corpus (../shared/corpus/fetch.sh DEST)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    ok = True
    for name in args.packages:
        root = package_dir(name)
        if root is None:
            print(f"{name:<8} not installed; skipped")
            continue
        ok &= sweep(name, root, args.jobs)
    if args.corpus:
        ok &= sweep("corpus", Path(args.corpus), args.jobs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
