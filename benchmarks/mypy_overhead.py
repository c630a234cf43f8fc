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

    python benchmarks/mypy_overhead.py --files 20 --runs 5 --warm-runs 15 --control

``--control`` adds a third configuration, a plugin that does nothing: its ratio to the
runs without a plugin is this machine's noise floor for the same number of runs. After
the timed rounds, a few more runs load the plugin through a wrapper that times every
call mypy makes into it (``--accounted-runs``): the plugin's own time in mypy's process,
which the noise of whole runs does not blur, printed as a share of the runs without it.
The wrapper needs mypy's ``--no-fast-exit`` to report at exit; those runs are not timed.

    python benchmarks/mypy_overhead.py --files 20 --runs 0 --instructions 2

counts the instructions mypy's process executes (valgrind's cachegrind, without cache
simulation), one cold run and N warm rounds per configuration: the work the plugin adds,
the same from run to run to a tenth of a percent however loaded the machine is. The
worker is another process and not counted; waiting for it executes nothing, and the
accounted time above includes those waits. A cold run takes minutes under valgrind.

Files default to the first N labelled corpus files of one distribution
(``../shared/corpus/files.txt`` beside the checkout, fetched with its ``fetch.sh`` into
``.bench-cache/corpus-a``); pass --dist, --listing and --corpus to choose others. They are
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
import compileall
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

REPO = Path(__file__).resolve().parent.parent
MODES = ("cold", "warm-edited", "warm-unchanged")
FLAGS = ["--ignore-missing-imports", "--follow-imports=silent", "--no-error-summary"]


def corpus_files(listing: Path, corpus: Path, dist: str, count: int) -> tuple[Path, list[str]]:
    if not (corpus / dist).is_dir():  # the corpus's own fetch script, beside its listing
        subprocess.run(["bash", str(listing.parent / "fetch.sh"), str(corpus)], check=True)
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


def mypy(root: Path, files: list[str], config: Path, cache: Path,
         extra: list[str] | None = None) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, output) of one mypy run."""
    cpu = children_cpu()
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir",
                             str(cache), *FLAGS, *(extra or []), *files], cwd=root, capture_output=True, text=True)
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


NO_OP_PLUGIN = """from mypy.plugin import Plugin


def plugin(version):
    return Plugin
"""

# Times every call mypy makes into the plugin, and every hook it hands back, in mypy's
# process; the worker runs beside mypy and is not counted, the waits for it are.
ACCOUNTING_PLUGIN = """import atexit, sys, time

started = time.perf_counter()
from dtype_lint.frontends.mypy.plugin import DtypeLintPlugin

spent = [time.perf_counter() - started]


def timed(function):
    def call(*args, **kwargs):
        start = time.perf_counter()
        try:
            result = function(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start
        return timed(result) if callable(result) else result
    return call


class Accounted(DtypeLintPlugin):
    pass


for name in ("get_method_hook", "get_function_hook", "get_additional_deps", "get_additional_indirect_deps"):
    setattr(Accounted, name, timed(getattr(DtypeLintPlugin, name)))
atexit.register(lambda: print(f"dtype-lint plugin seconds: {spent[0]:.6f}", file=sys.stderr))


def plugin(version):
    return Accounted
"""
ACCOUNTED = re.compile(r"^dtype-lint plugin seconds: (?P<seconds>[0-9.]+)$", re.M)


def accounted(root: Path, files: list[str], tmp: Path, runs: int) -> dict[str, list[float]]:
    """The plugin's own seconds in mypy's process, per mode: one cold run, then ``runs``
    edited and unchanged warm runs."""
    (tmp / "accounting_plugin.py").write_text(ACCOUNTING_PLUGIN, encoding="utf-8")
    config = tmp / "accounted.ini"
    config.write_text(f"[mypy]\nplugins = {tmp / 'accounting_plugin.py'}\n", encoding="utf-8")
    cache = tmp / "cache-accounted"
    spent: dict[str, list[float]] = {mode: [] for mode in MODES}

    def account(mode: str) -> None:
        _, _, output = mypy(root, files, config, cache, ["--no-fast-exit"])
        match = ACCOUNTED.search(output)
        if match is None:
            raise SystemExit(f"the accounting plugin did not report:\n{output}")
        spent[mode].append(float(match["seconds"]))

    account("cold")
    for index in range(runs):
        stamp(root, files, f"accounted {index}")
        account("warm-edited")
        account("warm-unchanged")
    return spent


CACHEGRIND_TOTAL = re.compile(r"I\s+refs:\s+(?P<count>[0-9,]+)")


def instructions(root: Path, files: list[str], tmp: Path, configs: dict[str, Path],
                 runs: int) -> dict[tuple[str, str], list[int]]:
    """Instructions of mypy's process, per mode and configuration."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt install valgrind)")
    counts: dict[tuple[str, str], list[int]] = {}

    def count(mode: str, label: str) -> None:
        result = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={tmp / 'cachegrind.out'}",
             sys.executable, "-m", "mypy", "--config-file", str(configs[label]), "--cache-dir",
             str(tmp / f"cache-counted-{label}"), *FLAGS, *files], cwd=root, capture_output=True, text=True)
        match = CACHEGRIND_TOTAL.search(result.stderr)
        if match is None or result.returncode not in (0, 1):
            raise SystemExit(f"valgrind failed:\n{result.stderr[-2000:]}")
        counts.setdefault((mode, label), []).append(int(match["count"].replace(",", "")))

    for label in configs:
        shutil.rmtree(tmp / f"cache-counted-{label}", ignore_errors=True)
        count("cold", label)
    for index in range(runs):
        stamp(root, files, f"counted {index}")
        for label in configs:
            count("warm-edited", label)
        for label in configs:
            count("warm-unchanged", label)
    return counts


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
    parser.add_argument("--listing", type=Path, default=REPO.parent / "shared" / "corpus" / "files.txt")
    parser.add_argument("--corpus", type=Path, default=REPO / ".bench-cache" / "corpus-a")
    parser.add_argument("--dist", default="lightning-2.0.9")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3, help="cold runs per configuration")
    parser.add_argument("--warm-runs", type=int, help="warm runs per configuration (default: --runs)")
    parser.add_argument("--one-core", action="store_true", help="pin everything to one core")
    parser.add_argument("--control", action="store_true", help="also time a plugin that does nothing")
    parser.add_argument("--accounted-runs", type=int, default=5,
                        help="warm runs that time the plugin's own calls (0: none)")
    parser.add_argument("--instructions", type=int, default=0,
                        help="warm rounds that count mypy's instructions under valgrind (0: none)")
    parser.add_argument("--sweep", action="store_true", help="check every labelled file with the plugin instead")
    args = parser.parse_args()
    if args.warm_runs and not args.runs:
        parser.error("--warm-runs needs --runs 1 or more: the cold runs make the warm caches")
    if args.one_core:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # inherited by every mypy
    if args.sweep:
        raise SystemExit(sweep(args.listing, args.corpus))

    # An installed dtype-lint has its bytecode compiled (pip does that at install); a
    # checkout run with PYTHONDONTWRITEBYTECODE has none, and every mypy run would then
    # charge compiling the plugin and the worker's modules to the plugin.
    import dtype_lint

    compileall.compile_dir(os.path.dirname(dtype_lint.__file__), quiet=1)
    source_root, files = corpus_files(args.listing, args.corpus, args.dist, args.files)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mypy-overhead-") as tmp_name:
        tmp = Path(tmp_name)
        # A copy, so that touching files for warm runs leaves the corpus as it was.
        root = tmp / "src"
        copy_with_packages(source_root, root, files)
        (tmp / "no_op_plugin.py").write_text(NO_OP_PLUGIN, encoding="utf-8")
        plugins = {"without": "", "with": "dtype_lint.frontends.mypy.plugin", "no-op": str(tmp / "no_op_plugin.py")}
        labels = ["without", "with", "no-op"] if args.control else ["without", "with"]
        configs = {}
        for label in labels:
            configs[label] = tmp / f"{label}.ini"
            configs[label].write_text(f"[mypy]\nplugins = {plugins[label]}\n" if plugins[label] else "[mypy]\n",
                                      encoding="utf-8")
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}

        def measure(mode: str, label: str) -> None:
            times.setdefault((mode, label), []).append(run(root, files, configs[label], tmp / f"cache-{label}"))

        # The configurations take turns, in alternating order, so that a drift of the
        # machine's speed shows in both.
        for index in range(args.runs):
            for label in labels if index % 2 == 0 else labels[::-1]:
                shutil.rmtree(tmp / f"cache-{label}", ignore_errors=True)
                measure("cold", label)
            print(f"cold run {index + 1}: " + "  ".join(
                f"{label} {times['cold', label][-1][0]:5.1f}s" for label in labels), flush=True)
        for index in range(args.warm_runs or args.runs):
            order = labels if index % 2 == 0 else labels[::-1]
            # One edit for both: each configuration's cache holds the previous round's
            # content, so both recheck every file, and then both find nothing to recheck.
            stamp(root, files, str(index))
            for label in order:
                measure("warm-edited", label)
            for label in order:
                measure("warm-unchanged", label)
            print(f"warm run {index + 1}: " + "  ".join(
                f"{label} edited {times['warm-edited', label][-1][0]:4.2f}s "
                f"unchanged {times['warm-unchanged', label][-1][0]:4.2f}s" for label in labels),
                flush=True)
        spent = accounted(root, files, tmp, args.accounted_runs) if args.accounted_runs and times else None
        counts = instructions(root, files, tmp, configs, args.instructions) if args.instructions else None
        print(f"{len(files)} files of {args.dist}, {args.runs} cold and {args.warm_runs or args.runs} warm runs each, "
              f"{len(os.sched_getaffinity(0))} core(s), "
              f"{time.perf_counter() - started:.0f} s in all; medians, with plugin / without:")
        for mode in MODES:
            timed = (mode, "without") in times
            for kind, index in (("wall", 0), ("CPU", 1)) if timed else ():
                without = statistics.median(t[index] for t in times[mode, "without"])
                line = f"  {mode:14} {kind:4}: without {without:6.2f}s"
                for label in labels[1:]:
                    median = statistics.median(t[index] for t in times[mode, label])
                    # Runs of one round follow each other: their ratio is free of the
                    # slow drifts of this machine's speed.
                    pairs = zip(times[mode, label], times[mode, "without"])
                    paired = statistics.median(w[index] / o[index] for w, o in pairs)
                    line += f"  {label} {median:6.2f}s ratio {median / without:.3f} paired {paired:.3f}"
                print(line)
            if spent and timed:
                seconds = statistics.median(spent[mode])
                without = statistics.median(t[0] for t in times[mode, "without"])
                print(f"  {mode:14} plugin's own time in mypy's process: {seconds * 1000:6.1f} ms "
                      f"(median of {len(spent[mode])}), ratio {1 + seconds / without:.3f}")
            if counts:
                line = f"  {mode:14} instructions: without {statistics.median(counts[mode, 'without']) / 1e9:.3f} G"
                for label in labels[1:]:
                    ratios = [w / o for w, o in zip(counts[mode, label], counts[mode, "without"])]
                    line += (f"  {label} {statistics.median(counts[mode, label]) / 1e9:.3f} G "
                             f"ratio {statistics.median(ratios):.4f} (of {len(ratios)})")
                print(line)


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
        config.write_text("[mypy]\nplugins = dtype_lint.frontends.mypy.plugin\n", encoding="utf-8")
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
