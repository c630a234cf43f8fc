"""The mypy plugin's cost: mypy with and without it on the same files, cold and warm.

Runs the two configurations alternately, each with its own cache directory, and prints
the median times and their ratio. Cold: an empty cache each run. Warm: the cache of a
previous run, with the checked files touched so mypy rechecks them (their dependencies,
torch included, come from the cache).

    python benchmarks/mypy_overhead.py --files 20 --runs 3

Files default to the first N labelled corpus files of one distribution
(/work/shared/corpus/files.txt); pass --dist and --corpus to choose others.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLAGS = ["--ignore-missing-imports", "--follow-imports=silent", "--no-error-summary"]


def corpus_files(listing: Path, corpus: Path, dist: str, count: int) -> tuple[Path, list[str]]:
    files = []
    for line in listing.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        _, dist_dir, path = line.split("\t")
        if dist_dir == dist:
            files.append(path)
    return corpus / dist, files[:count]


def run(root: Path, files: list[str], config: Path, cache: Path) -> float:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir",
                             str(cache), *FLAGS, *files], cwd=root, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1) or "Traceback" in result.stdout + result.stderr:
        raise SystemExit(f"mypy failed:\n{result.stdout}{result.stderr}")
    return elapsed


def touch(root: Path, files: list[str]) -> None:
    # A changed mtime alone does not make mypy recheck (it compares hashes); append and
    # strip a comment so the hash changes and the files are checked again.
    for name in files:
        path = root / name
        data = path.read_bytes()
        marker = b"\n# mypy-overhead\n"
        path.write_bytes(data[: -len(marker)] if data.endswith(marker) else data + marker)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listing", type=Path, default=Path("/work/shared/corpus/files.txt"))
    parser.add_argument("--corpus", type=Path, default=Path("/work/cache/corpus"))
    parser.add_argument("--dist", default="lightning-2.0.9")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    source_root, files = corpus_files(args.listing, args.corpus, args.dist, args.files)
    with tempfile.TemporaryDirectory(prefix="mypy-overhead-") as tmp_name:
        tmp = Path(tmp_name)
        # A copy, so that touching files for warm runs leaves the corpus as it was.
        root = tmp / "src"
        for name in files:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source_root / name, root / name)
        configs = {}
        for label, plugins in (("without", ""), ("with", "plugins = dtype_lint.mypy_plugin\n")):
            configs[label] = tmp / f"{label}.ini"
            configs[label].write_text(f"[mypy]\n{plugins}", encoding="utf-8")
        times: dict[tuple[str, str], list[float]] = {}
        for index in range(args.runs):
            for label in ("without", "with") if index % 2 == 0 else ("with", "without"):
                cache = tmp / f"cache-{label}"
                shutil.rmtree(cache, ignore_errors=True)
                times.setdefault(("cold", label), []).append(run(root, files, configs[label], cache))
                touch(root, files)
                times.setdefault(("warm", label), []).append(run(root, files, configs[label], cache))
                print(f"run {index + 1} {label:7}: cold {times['cold', label][-1]:6.1f}s  "
                      f"warm {times['warm', label][-1]:6.1f}s", flush=True)
        print(f"{len(files)} files of {args.dist}, {args.runs} runs, medians:")
        for mode in ("cold", "warm"):
            without = statistics.median(times[mode, "without"])
            with_plugin = statistics.median(times[mode, "with"])
            print(f"  {mode}: without {without:6.2f}s  with {with_plugin:6.2f}s  ratio {with_plugin / without:.3f}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
