"""How fast dtype-lint is, against a bare LibCST parse of the same files and other tools.

    python benchmarks/speed.py                      # fetches the corpus, medium pair + whole
    python benchmarks/speed.py --corpus DIR --sets medium --repeat 3

Prints one table: the median wall time of each row over ``--repeat`` rounds (the rows
that are compared run in turn within each round, so that the machine's load falls on
them alike; rows marked "1 run" run once, they take minutes), the ratios measured in
the same run, and the targets. The corpus (pinned wheels: transformers, diffusers, timm,
pytorch-lightning, flax, optax, dm-haiku) is fetched by ``perf-corpus.sh`` into
``.bench-cache/perf-corpus`` unless ``--corpus`` names a copy; it is never copied into
the repository. Every set is also linted with the prefilter off (``--no-prefilter``)
and the findings must be identical (the script exits 1 if not). TorchFix and ruff are
anchors; flake8 and TorchFix rows are measured on the medium pair only (TorchFix
takes many minutes there already). flake8 runs every installed plugin whatever
``--select`` says, so the plugin's own cost is flake8 with dtype-lint installed against
the same flake8 release in a venv without it (``.bench-cache/flake8-bare``, made on first
use). They are run from ``--anchors VENV`` (default ``.bench-cache/anchors``, made
with ``python -m venv`` and ``pip install torchfix ruff``) and skipped if missing.

dtype-lint runs with the interpreter that runs this script (``sys.executable``): its
project model resolves imports into that interpreter's installed packages (torch, jax,
flax...), reading their source without importing it, so run the script with the
project's environment; the notes under the table name the interpreter and count the
results that consulted installed files. The medium pair's ruff rows run ``ruff check
--select ALL --no-cache`` and dtype-lint ``--no-cache`` with ``-j`` left at its default
(every core), in turn in each round, and compare wall time and CPU time (user + sys of
the process and the children it waited for, from ``os.wait4``). The edit rows lint a
copy of the set (the corpus is never written to) into a fresh cache, append a line
``# edited`` to the first-party file that most other results consulted (read from the
cache's records of consulted files), run ``check -v`` and count the files linted
again: that file and the results that consulted it, no others; then the same for a file
no result consulted (1 file).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("transformers", "diffusers", "timm", "pytorch-lightning", "flax", "optax", "dm-haiku")
MEDIUM = ("pytorch-lightning", "flax")
# The team's shared folder lies beside the repository's checkout.
CORPUS_SCRIPT = Path(os.environ.get("PERF_CORPUS_SCRIPT", ROOT.parent / "shared" / "perf-corpus.sh"))

BARE_PARSE = """
import sys, libcst
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        libcst.parse_module(data)
    except Exception:
        pass
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="an unpacked corpus (default: fetch into .bench-cache)")
    parser.add_argument("--sets", default="medium,whole", help="medium and/or whole (comma-separated)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (median)")
    parser.add_argument("--anchors", type=Path, default=ROOT / ".bench-cache" / "anchors")
    args = parser.parse_args()
    args.anchors = args.anchors.resolve()  # the rows run from another folder
    # As installed by pip: byte-compiled, so that no row pays for compiling dtype-lint's
    # modules (PYTHONDONTWRITEBYTECODE would otherwise make every run compile them).
    import dtype_lint

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(dtype_lint.__file__).parent)], check=True)
    corpus = args.corpus or fetch_corpus(ROOT / ".bench-cache" / "perf-corpus")
    rows: list[tuple[str, str, float | None, str, str]] = []
    package = Path(dtype_lint.__file__).parent
    notes: list[str] = [interpreter_note(), f"dtype_lint measured from {package}"]
    source = source_stamp(package)
    identical = True
    for name in args.sets.split(","):
        folders = [corpus / p for p in (MEDIUM if name == "medium" else PACKAGES)]
        missing = [str(f) for f in folders if not f.is_dir()]
        if missing:
            sys.exit(f"corpus incomplete, missing {missing}; run {CORPUS_SCRIPT} DEST")
        set_rows, same = measure_set(name, folders, args.repeat if name == "medium" else 1, args.anchors, notes)
        rows += set_rows
        identical &= same
    if source_stamp(package) != source:
        notes.append(f"dtype-lint's source under {package} CHANGED during the run: its cache keys changed with it, "
                      "so the warm and edit rows are void; measure a snapshot (PYTHONPATH=a `git archive` of it)")
    _per_line_ratio(rows)
    print_table(rows)
    print("\nnotes:")
    for note in notes:
        print(f"- {note}")
    print(f"\nfindings with the prefilter on and off: {'identical' if identical else 'DIFFERENT'}")
    return 0 if identical else 1


INSTALLED = ("torch", "jax", "flax")


def interpreter_note() -> str:
    """Which interpreter runs dtype-lint, and the installed packages its imports resolve into."""
    from importlib.metadata import PackageNotFoundError, version

    found, missing = [], []
    for name in INSTALLED:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            missing.append(name)
    note = (f"dtype-lint ran as `{sys.executable} -m dtype_lint` (Python {sys.version.split()[0]}): its project "
            f"model resolves imports into that interpreter's installed packages ({', '.join(found) or 'none'}), "
            "reading their source without importing it; the cold rows count that work")
    if missing:
        note += f"; NOT installed there, so not counted: {', '.join(missing)}"
    return note


def source_stamp(package: Path) -> list[tuple[str, int, int]]:
    """Names, sizes and modification times of dtype-lint's modules (what its cache's keys
    cover): when they change during the run, warm runs lint everything again."""
    return [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(package.rglob("*.py"))]


def fetch_corpus(dest: Path) -> Path:
    if all((dest / p).is_dir() for p in PACKAGES):
        return dest
    subprocess.run(["bash", str(CORPUS_SCRIPT), str(dest)], check=True)
    return dest


def measure_set(name: str, folders: list[Path], repeat: int, anchors: Path, notes: list[str]) -> tuple[list, bool]:
    files = sorted(str(p) for f in folders for p in f.rglob("*.py"))
    lines = sum(Path(p).read_bytes().count(b"\n") for p in files)
    label = f"{name}: {', '.join(f.name for f in folders)} ({len(files)} files, {lines / 1000:.0f}k lines)"
    dirs = [str(f) for f in folders]
    lint = [sys.executable, "-m", "dtype_lint", "check", "--output-format", "json", "--exit-zero", *dirs]
    lint_text = [sys.executable, "-m", "dtype_lint", "check", "--output-format", "text", "--exit-zero", *dirs]
    rows: list[tuple[str, str, float | None, str, str]] = []

    def row(name: str, value: float | None, ratio: str, target: str) -> None:
        print(f"  {label} | {name} | {value} | {ratio}", file=sys.stderr, flush=True)
        rows.append((label, name, value, ratio, target))

    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "on.json")
        cold_errors = os.path.join(tmp, "on.stderr")
        cache_dir = os.path.join(tmp, "cache")
        filled = subprocess.run(lint + ["--cache-dir", cache_dir], stdout=subprocess.DEVNULL, cwd=tmp, check=False)
        if filled.returncode not in (0, 2):  # 2: file errors, reported by the cold row
            sys.exit(f"dtype-lint failed on the {name} set (exit {filled.returncode})")
        notes.append(f"{name}: {installed_note(cache_dir, folders)}")
        flake8 = [sys.executable, "-m", "flake8", "--exit-zero", *dirs]
        ruff = anchors / "bin" / "ruff"
        commands = {
            "parse": ([sys.executable, "-c", BARE_PARSE, *files], None),
            "cold": (lint + ["-j", "1", "--no-cache"], results, cold_errors),
            "cold2": (lint + ["-j", "2", "--no-cache"], None),
            "warm": (lint + ["--cache-dir", cache_dir], None),
            # what a person reads: text, the closing summary, colour forced on
            "warm_text": (["env", "FORCE_COLOR=1", *lint_text, "--cache-dir", cache_dir], None),
        }
        bare = bare_flake8(ROOT / ".bench-cache" / "flake8-bare") if name == "medium" else None
        if name == "medium":
            commands["dtl"] = (flake8 + ["--select", "DTL"], None)
            if bare is not None:
                commands["bare"] = ([str(bare), "-I", "-m", "flake8", "--exit-zero", "--select", "DTL", *dirs], None)
            if ruff.exists():  # wall and CPU time against ruff's, every core for both
                commands["ruff"] = ([str(ruff), "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", *dirs],
                                    None)
                commands["default"] = (lint + ["--no-cache"], None)
        peak = [0]
        times, cpu = rounds(commands, repeat, peak_of="cold2", peak=peak)
        parse, cold, cold2, warm = times["parse"], times["cold"], times["cold2"], times["warm"]
        row("bare libcst.parse_module, 1 process (yardstick)", parse, "1", "")
        row("dtype-lint check -j 1 --no-cache (cold)", cold, f"{cold / parse:.2f} × parse", "≤ 0.5 × parse")
        row("dtype-lint check -j 2 --no-cache (cold)", cold2, f"{cold2 / cold:.2f} × cold -j 1", "≤ 0.65")
        row("dtype-lint check, warm cache", warm, f"{warm / cold:.3f} × cold -j 1", "≤ 0.05")
        row("warm cache, text + summary + colour", times["warm_text"], f"{times['warm_text'] / warm:.2f} × warm json", "≤ 1.05")
        row("peak RSS, dtype-lint -j 2 incl. workers", None, f"{peak[0] / 2**20:.0f} MB", "≤ 250 MB (whole)")
        edit_rows(folders, row, notes, name)
        if name != "medium":
            return _finish(rows, row, lint, tmp, results, parse, cold, lines, cold_errors, notes, name)
        # flake8 runs every installed plugin whatever --select says, so the plugin's own
        # cost is flake8 with it against the same flake8 without it installed.
        with_dtl = times["dtl"]
        row("flake8 --select DTL, dtype-lint installed", with_dtl, "", "")
        if bare is None:
            row("flake8 without dtype-lint", None, "venv not made (offline?)", "")
        else:
            without = times["bare"]
            row("same flake8 without dtype-lint installed", without, "", "")
            row("flake8 plugin's own cost (difference)", with_dtl - without,
                f"{(with_dtl - without) / parse:.2f} × parse", "≤ 0.5 × parse")
        if ruff.exists():
            rt, rc, dt, dc = times["ruff"], cpu["ruff"], times["default"], cpu["default"]
            row("ruff check --select ALL --no-cache, all cores (anchor)", rt,
                f"{rt / parse:.2f} × parse; CPU {rc:.2f} s", "")
            jobs = os.cpu_count()
            row(f"dtype-lint check --no-cache, -j default ({jobs} cores): wall", dt, f"{dt / rt:.2f} × ruff's wall", "")
            row(f"dtype-lint check --no-cache, -j default ({jobs} cores): CPU, user+sys incl. workers", dc,
                f"{dc / rc:.2f} × ruff's CPU", "")
        else:
            row("ruff check --select ALL (anchor)", None, "not installed", "")
        torchfix = anchors / "bin" / "torchfix"
        if torchfix.exists():
            tf = timed([str(torchfix), *dirs], 1)
            # TorchFix uses every core, as dtype-lint does by default (-j 2 here).
            row("TorchFix CLI (anchor, 1 run)", tf,
                f"dtype-lint -j 2 {tf / cold2:.1f}×, -j 1 {tf / cold:.1f}× faster", "≥ 20×")
        else:
            row("TorchFix CLI (anchor)", None, "not installed", "")
        return _finish(rows, row, lint, tmp, results, parse, cold, lines, cold_errors, notes, name)


def cache_records(cache_dir: str) -> list[dict[str, str]]:
    """The files each cached result consulted (``deps`` of every entry: path to digest),
    as dtype-lint records them; empty where the entries' layout is not that."""
    records = []
    for entry in Path(cache_dir).glob("*/*.json"):
        try:
            deps = json.loads(entry.read_bytes()).get("deps")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(deps, dict):
            records.append(deps)
    return records


def installed_note(cache_dir: str, folders: list[Path]) -> str:
    """How many results consulted installed files (not the set's own), and whose."""
    records = cache_records(cache_dir)
    inside = tuple(os.path.join(os.path.abspath(f), "") for f in folders)
    per_package: dict[str, int] = {}
    consulting = 0
    for deps in records:
        outside = {_distribution(p) for p in deps if not p.startswith(inside)}
        consulting += bool(outside)
        for package in outside:
            per_package[package] = per_package.get(package, 0) + 1
    top = sorted(per_package.items(), key=lambda kv: (-kv[1], kv[0]))[:6]
    shown = ", ".join(f"{package} {count}" for package, count in top)
    return (f"{consulting} of {len(records)} cached results consulted installed files "
            f"(results per package: {shown or 'none'})")


def _distribution(path: str) -> str:
    """The top-level package an installed file belongs to (after ``site-packages``)."""
    parts = Path(path).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return Path(parts[parts.index(marker) + 1]).stem
    return "the standard library" if "lib" in parts else path


VERBOSE = re.compile(r"dtype-lint: (\d+) files: (\d+) linted, (\d+) from the cache")


def edit_rows(folders: list[Path], row, notes: list[str], name: str) -> None:
    """On a copy of the set (the corpus itself is never written to) with a full cache: a
    warm run after appending a line to the file most other results consulted re-lints
    that file and those results, no others; after editing a file no result consulted, 1."""
    with tempfile.TemporaryDirectory(prefix="dtl-edit-") as work:
        copy = Path(work) / "copy"
        for folder in folders:
            shutil.copytree(folder, copy / folder.name, symlinks=True)
        dirs = [str(copy / folder.name) for folder in folders]
        cache_dir = os.path.join(work, "cache")
        check = [sys.executable, "-m", "dtype_lint", "check", "--output-format", "json", "--exit-zero", "-v",
                 "--cache-dir", cache_dir, *dirs]
        verbose(check, os.path.join(work, "fill.stderr"))  # fills the cache (-j default)
        _, _, settled, total = verbose(check, os.path.join(work, "settled.stderr"))
        if settled != 0:
            row("warm run over a full cache", None, f"{settled} files re-linted of {total}", "0")
        inside = os.path.join(str(copy), "")
        records = [[p for p in deps if p.startswith(inside)] for deps in cache_records(cache_dir)]
        consulted: dict[str, int] = {}
        for deps in records:
            for path in deps:
                consulted[path] = consulted.get(path, 0) + 1
        files = sorted(str(p) for d in dirs for p in Path(d).rglob("*.py"))
        if consulted:
            modules = {p: n for p, n in consulted.items() if Path(p).name != "__init__.py"} or consulted
            hub = min(modules, key=lambda p: (-modules[p], p))
        else:  # the cache's layout changed: a module widely imported, by name
            notes.append(f"{name}: the cache's records of consulted files could not be read")
            hub = next((p for p in files if p.endswith(("modeling_utils.py", os.sep + "module.py"))), files[0])
        imported = imported_names(files)
        leaves = [p for p in files if p not in consulted and Path(p).name != "__init__.py"]
        leaf = next((p for p in leaves if Path(p).stem not in imported), leaves[0] if leaves else files[-1])
        why = {hub: f"consulted by {consulted.get(hub, 0)} results", leaf: "nothing imports it"}
        if Path(leaf).stem in imported:
            why[leaf] = "no result consulted it"
        for chosen in (hub, leaf):
            expected = consulted.get(chosen, 0) + 1 if records else None
            with open(chosen, "ab") as handle:
                handle.write(b"\n# edited\n")
            wall, cpu, linted, total = verbose(check, os.path.join(work, "edit.stderr"))
            shown = os.path.relpath(chosen, copy)
            target = ("" if expected is None else
                      f"= {expected}: the file + the {expected - 1} results that consulted it")
            row(f"after editing {shown} ({why[chosen]}): warm run, -j default", wall,
                f"{linted} file{'s' * (linted != 1)} re-linted of {total}; CPU {cpu:.2f} s", target)


IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+(\([^)]*\)|[^\n]*)|import\s+([^\n]*))", re.MULTILINE)


def imported_names(files: list[str]) -> set[str]:
    """Every name an import statement of ``files`` writes (modules and what is taken
    from them): a file whose stem is not among them is imported by none of them."""
    names: set[str] = set()
    for path in files:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        for match in IMPORT.finditer(text):
            names.update(re.findall(r"\w+", " ".join(g for g in match.groups() if g)))
    return names


def verbose(command: list[str], stderr: str) -> tuple[float, float, int, int]:
    """Wall and CPU time of a ``check -v`` run, the files it linted and all it answered."""
    wall, cpu = run_once(command, stderr=stderr)
    found = VERBOSE.findall(Path(stderr).read_text(errors="replace"))
    if not found:
        sys.exit(f"no `N files: X linted` line from {' '.join(command[:6])} ...: see {stderr}")
    total, linted, _ = map(int, found[-1])
    return wall, cpu, linted, total


def bare_flake8(venv: Path) -> Path | None:
    """The python of a venv holding the flake8 release installed here (and its default
    plugins) but not dtype-lint; made on first use, from the package index."""
    from importlib.metadata import version

    python = venv / "bin" / "python"
    wanted = f"flake8=={version('flake8')}"
    marker = venv / "flake8-version"
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", wanted], check=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"cannot make {venv}: {exc}", file=sys.stderr)
        return None
    marker.write_text(wanted)
    return python


# A warm run lasts a fifth of a second, about what Python's start-up varies by here: it
# is timed several times a round, so that its median rests on as many samples.
SAMPLES_PER_ROUND = {"warm": 5, "warm_text": 5}


def rounds(commands: dict, repeat: int, peak_of: str, peak: list[int]) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and CPU time of each command, running them in turn round after round,
    so that a change in the machine's load falls on every row alike (the ratios are what
    count). A command is ``(argv, stdout file or None[, stderr file])``."""
    walls: dict[str, list[float]] = {key: [] for key in commands}
    cpus: dict[str, list[float]] = {key: [] for key in commands}
    for _ in range(repeat):
        for key, (command, stdout, *stderr) in commands.items():
            for _ in range(SAMPLES_PER_ROUND.get(key, 1)):
                wall, cpu = run_once(command, stdout=stdout, stderr=stderr[0] if stderr else None,
                                     peak=peak if key == peak_of else None)
                walls[key].append(wall)
                cpus[key].append(cpu)
    median = statistics.median
    return {key: median(v) for key, v in walls.items()}, {key: median(v) for key, v in cpus.items()}


def _finish(rows, row, lint, tmp, results, parse, cold, lines, cold_errors, notes, name) -> tuple[list, bool]:
    """The prefilter-off run (two processes: its output is the same as one's) and the
    comparison of its findings with the cold run's; the file errors either reported."""
    off_results = os.path.join(tmp, "off.json")
    off_errors = os.path.join(tmp, "off.stderr")
    off = timed(lint + ["-j", "2", "--no-cache", "--no-prefilter"], 1, stdout=off_results, stderr=off_errors)
    row("dtype-lint -j 2 --no-prefilter (1 run)", off, f"{off / parse:.2f} × parse", "")
    same = Path(results).read_bytes() == Path(off_results).read_bytes()
    count = len(json.loads(Path(results).read_text()))
    if not same:
        notes.append(f"{name}: prefilter on vs off: {_difference(results, off_results)}")
    row(f"findings, prefilter on vs off ({count})", None, "identical" if same else "DIFFERENT", "identical")
    errors = {}
    for label, path in (("cold -j 1", cold_errors), ("prefilter off", off_errors)):
        errors[label] = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ": error: " in ln]
    internal = sum("internal error" in ln for lines_ in errors.values() for ln in lines_)
    row("file errors reported (cold -j 1 / prefilter off)", None,
        f"{len(errors['cold -j 1'])} / {len(errors['prefilter off'])}, {internal} internal", "0 internal")
    for label, lines_ in errors.items():
        for line in lines_:
            notes.append(f"{name}: {label}: {line}")
    row("cold -j 1 per 1k lines", cold / lines * 1000, "", "whole ≤ 1.3 × medium")
    return rows, same


def _difference(on: str, off: str) -> str:
    """The findings only one of the two runs reported, in full."""
    def keyed(path: str) -> list[str]:
        return [json.dumps(f, sort_keys=True) for f in json.loads(Path(path).read_text())]

    a, b = keyed(on), keyed(off)
    only_on = [f for f in a if f not in b]
    only_off = [f for f in b if f not in a]
    if not only_on and not only_off:
        return "the same findings in another order"
    return f"only with the prefilter on: {only_on}; only with it off: {only_off}"


def _per_line_ratio(rows: list) -> None:
    """Where both sets ran, the whole corpus's cold time per line as a multiple of the
    medium pair's (bigger files must not cost more per line)."""
    at = {label.split(":", 1)[0]: i for i, (label, name, *_) in enumerate(rows) if name == "cold -j 1 per 1k lines"}
    if "medium" in at and "whole" in at:
        label, name, value, _, target = rows[at["whole"]]
        rows[at["whole"]] = (label, name, value, f"{value / rows[at['medium']][2]:.2f} × medium", target)


def timed(command: list[str], repeat: int, stdout: str | None = None, stderr: str | None = None,
          peak: list[int] | None = None) -> float:
    """Median wall time; ``peak`` gets the largest summed RSS of the process tree."""
    return statistics.median(run_once(command, stdout, stderr, peak)[0] for _ in range(repeat))


def run_once(command: list[str], stdout: str | None = None, stderr: str | None = None,
             peak: list[int] | None = None) -> tuple[float, float]:
    """Wall time and CPU time (user + sys of the process and of the children it waited
    for: dtype-lint's workers) of one run."""
    with contextlib.ExitStack() as files:
        sink = files.enter_context(open(stdout, "wb")) if stdout else subprocess.DEVNULL
        errors = files.enter_context(open(stderr, "wb")) if stderr else subprocess.DEVNULL
        start = time.perf_counter()
        # Not from the repository: `python -m` would put it first on sys.path, ahead of
        # a PYTHONPATH that points at a snapshot of the package being measured.
        proc = subprocess.Popen(command, stdout=sink, stderr=errors, cwd=tempfile.gettempdir())
        sampler = _RssSampler(proc.pid) if peak is not None else None
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if sampler is not None:
            peak[0] = max(peak[0], sampler.stop())
    return wall, usage.ru_utime + usage.ru_stime


class _RssSampler:
    """Polls /proc for the summed resident memory of a process and its descendants."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.done = pid, 0, False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done:
            self.peak = max(self.peak, sum(_rss(p) for p in _tree(self.pid)))
            time.sleep(0.02)

    def stop(self) -> int:
        self.done = True
        self.thread.join()
        return self.peak


def _tree(pid: int) -> list[int]:
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as handle:
                    stack.extend(int(c) for c in handle.read().split())
        except OSError:
            pass
    return out


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def print_table(rows: list[tuple[str, str, float | None, str, str]]) -> None:
    print("| files | row | median | ratio (same run) | target |")
    print("|---|---|---|---|---|")
    for label, name, value, ratio, target in rows:
        shown = "" if value is None else f"{value:.3f} s" if "per 1k" in name else f"{value:.2f} s"
        print(f"| {label} | {name} | {shown} | {ratio} | {target} |")


if __name__ == "__main__":
    raise SystemExit(main())
