"""The mypy plugin's cost: mypy with and without it on the same files, cold and warm.

Runs the two configurations alternately, each with its own cache directory, and prints
the median times and their ratio, wall-clock and CPU (user + system of the mypy process:
steadier than wall-clock on a loaded machine). Cold: an empty cache each run. Warm,
edited: the cache of a previous run, with every checked file edited (a comment appended)
so that mypy rechecks them all (their dependencies, torch included, come from the
cache): the plugin's worst case. Warm, unchanged: the same run again, nothing to
recheck. A warm run takes about a second and varies by a tenth or more from run to run,
so take more of them (``--warm-runs``) than of the cold ones. Besides the ratio of the
medians it prints the median of the ratios of each round's two runs ("paired").

    python benchmarks/mypy_overhead.py --files 20 --runs 5 --warm-runs 15

Files default to the first N labelled corpus files of one distribution
(/work/shared/corpus/files.txt); pass --dist and --corpus to choose others. They are
copied with the ``__init__.py`` files of their packages, so that they keep their module
names (lightning has several ``xla.py``).

    python benchmarks/mypy_overhead.py --files 20 --runs 3 --one-core

pins the benchmark and every mypy it starts to one core, as on a one-core CI runner (the
plugin then lints in mypy's own process).

    python benchmarks/mypy_overhead.py --sweep

checks every labelled corpus file with the plugin instead (one mypy run per
distribution, one shared cache) and compares with ``dtype-lint check`` on the same files:
internal errors (must be 0), and findings of the plugin and of the CLI by code.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = ("cold", "warm-edited", "warm-unchanged")
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


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def mypy(root: Path, files: list[str], config: Path, cache: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, output) of one mypy run."""
    cpu = children_cpu()
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir",
                             str(cache), *FLAGS, *files], cwd=root, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    output = result.stdout + result.stderr
    if result.returncode not in (0, 1) or "Traceback" in output or "INTERNAL ERROR" in output:
        raise SystemExit(f"mypy failed:\n{output}")
    return elapsed, children_cpu() - cpu, output


def run(root: Path, files: list[str], config: Path, cache: Path) -> tuple[float, float]:
    wall, cpu, _ = mypy(root, files, config, cache)
    return wall, cpu


def copy_with_packages(source_root: Path, root: Path, files: list[str]) -> None:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source_root / name, root / name)
        parent = Path(name).parent
        while parent != Path("."):
            init = source_root / parent / "__init__.py"
            if init.exists() and not (root / parent / "__init__.py").exists():
                shutil.copy(init, root / parent / "__init__.py")
            parent = parent.parent


def stamp(root: Path, files: list[str], mark: str) -> None:
    """Give every file new content: a changed mtime alone does not make mypy recheck (it
    compares hashes). The stamp is unique per round, so no cache ever matches it."""
    for name in files:
        path = root / name
        text = path.read_text(encoding="utf-8").split(STAMP)[0]
        path.write_text(f"{text}{STAMP}{mark}\n", encoding="utf-8")


STAMP = "\n# mypy-overhead "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listing", type=Path, default=Path("/work/shared/corpus/files.txt"))
    parser.add_argument("--corpus", type=Path, default=Path("/work/cache/corpus"))
    parser.add_argument("--dist", default="lightning-2.0.9")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3, help="cold runs per configuration")
    parser.add_argument("--warm-runs", type=int, help="warm runs per configuration (default: --runs)")
    parser.add_argument("--one-core", action="store_true", help="pin everything to one core")
    parser.add_argument("--sweep", action="store_true", help="check every labelled file with the plugin instead")
    args = parser.parse_args()
    if args.one_core:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # inherited by every mypy
    if args.sweep:
        raise SystemExit(sweep(args.listing, args.corpus))

    source_root, files = corpus_files(args.listing, args.corpus, args.dist, args.files)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mypy-overhead-") as tmp_name:
        tmp = Path(tmp_name)
        # A copy, so that touching files for warm runs leaves the corpus as it was.
        root = tmp / "src"
        copy_with_packages(source_root, root, files)
        configs = {}
        for label, plugins in (("without", ""), ("with", "plugins = dtype_lint.mypy_plugin\n")):
            configs[label] = tmp / f"{label}.ini"
            configs[label].write_text(f"[mypy]\n{plugins}", encoding="utf-8")
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}

        def measure(mode: str, label: str) -> None:
            times.setdefault((mode, label), []).append(run(root, files, configs[label], tmp / f"cache-{label}"))

        # The configurations take turns, in alternating order, so that a drift of the
        # machine's speed shows in both.
        for index in range(args.runs):
            for label in ("without", "with") if index % 2 == 0 else ("with", "without"):
                shutil.rmtree(tmp / f"cache-{label}", ignore_errors=True)
                measure("cold", label)
            print(f"cold run {index + 1}: " + "  ".join(
                f"{label} {times['cold', label][-1][0]:5.1f}s" for label in ("without", "with")), flush=True)
        for index in range(args.warm_runs or args.runs):
            order = ("without", "with") if index % 2 == 0 else ("with", "without")
            # One edit for both: each configuration's cache holds the previous round's
            # content, so both recheck every file, and then both find nothing to recheck.
            stamp(root, files, str(index))
            for label in order:
                measure("warm-edited", label)
            for label in order:
                measure("warm-unchanged", label)
            print(f"warm run {index + 1}: " + "  ".join(
                f"{label} edited {times['warm-edited', label][-1][0]:4.2f}s "
                f"unchanged {times['warm-unchanged', label][-1][0]:4.2f}s" for label in ("without", "with")),
                flush=True)
        print(f"{len(files)} files of {args.dist}, {args.runs} cold and {args.warm_runs or args.runs} warm runs each, "
              f"{len(os.sched_getaffinity(0))} core(s), "
              f"{time.perf_counter() - started:.0f} s in all; medians, with plugin / without:")
        for mode in MODES:
            for kind, index in (("wall", 0), ("CPU", 1)):
                without = statistics.median(t[index] for t in times[mode, "without"])
                with_plugin = statistics.median(t[index] for t in times[mode, "with"])
                # Runs of one round follow each other: their ratio is free of the slow
                # drifts of this machine's speed.
                paired = statistics.median(w[index] / o[index] for w, o in zip(times[mode, "with"],
                                                                                times[mode, "without"]))
                print(f"  {mode:14} {kind:4}: without {without:6.2f}s  with {with_plugin:6.2f}s  "
                      f"ratio {with_plugin / without:.3f}  paired {paired:.3f}")


DTL_ERROR = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+)(?::(?P<column>\d+))?: error: .*  \[(?P<code>DTL\d+)\]$")


def sweep(listing: Path, corpus: Path) -> int:
    """Every labelled file, checked with the plugin: one mypy run per distribution (module
    names repeat across distributions), all with one cache; then `dtype-lint check`."""
    by_dist: dict[str, list[str]] = collections.defaultdict(list)
    for line in listing.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        _, dist_dir, path = line.split("\t")
        by_dist[dist_dir].append(path)
    plugin_total: collections.Counter[str] = collections.Counter()
    cli_total: collections.Counter[str] = collections.Counter()
    internal = files_total = 0
    with tempfile.TemporaryDirectory(prefix="mypy-sweep-") as tmp_name:
        tmp = Path(tmp_name)
        config = tmp / "with.ini"
        config.write_text("[mypy]\nplugins = dtype_lint.mypy_plugin\n", encoding="utf-8")
        for dist, files in sorted(by_dist.items()):
            root = tmp / dist
            copy_with_packages(corpus / dist, root, files)
            wall, _, output = mypy(root, files, config, tmp / "cache")
            notes = [line for line in output.splitlines() if "dtype-lint mypy plugin: internal error" in line]
            internal += len(notes)
            plugin = collections.Counter(m["code"] for m in map(DTL_ERROR.match, output.splitlines()) if m)
            cli_run = subprocess.run([sys.executable, "-m", "dtype_lint", "check", "--output-format", "json",
                                      *files], cwd=root, capture_output=True, text=True)
            cli = collections.Counter(f["code"] for f in json.loads(cli_run.stdout or "[]"))
            plugin_total += plugin
            cli_total += cli
            files_total += len(files)
            print(f"{dist:24} {len(files):3} files  {wall:6.1f}s  internal errors {len(notes)}  "
                  f"plugin {sum(plugin.values()):3}  CLI {sum(cli.values()):3}", flush=True)
            for note in notes:
                print("    " + note)
    codes = sorted(set(plugin_total) | set(cli_total))
    print(f"{files_total} files, {len(by_dist)} mypy runs, {internal} internal errors")
    print("  code    plugin  CLI")
    for code in codes:
        print(f"  {code}  {plugin_total[code]:6}  {cli_total[code]:4}")
    return 1 if internal else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
