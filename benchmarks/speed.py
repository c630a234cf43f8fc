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
"""

from __future__ import annotations

import argparse
import json
import os
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
    identical = True
    for name in args.sets.split(","):
        folders = [corpus / p for p in (MEDIUM if name == "medium" else PACKAGES)]
        missing = [str(f) for f in folders if not f.is_dir()]
        if missing:
            sys.exit(f"corpus incomplete, missing {missing}; run {CORPUS_SCRIPT} DEST")
        set_rows, same = measure_set(name, folders, args.repeat if name == "medium" else 1, args.anchors)
        rows += set_rows
        identical &= same
    _per_line_ratio(rows)
    print_table(rows)
    print(f"\nfindings with the prefilter on and off: {'identical' if identical else 'DIFFERENT'}")
    return 0 if identical else 1


def fetch_corpus(dest: Path) -> Path:
    if all((dest / p).is_dir() for p in PACKAGES):
        return dest
    subprocess.run(["bash", str(CORPUS_SCRIPT), str(dest)], check=True)
    return dest


def measure_set(name: str, folders: list[Path], repeat: int, anchors: Path) -> tuple[list, bool]:
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
        cache_dir = os.path.join(tmp, "cache")
        subprocess.run(lint + ["--cache-dir", cache_dir], stdout=subprocess.DEVNULL, check=True, cwd=tmp)
        flake8 = [sys.executable, "-m", "flake8", "--exit-zero", *dirs]
        commands = {
            "parse": ([sys.executable, "-c", BARE_PARSE, *files], None),
            "cold": (lint + ["-j", "1", "--no-cache"], results),
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
        peak = [0]
        times = rounds(commands, repeat, peak_of="cold2", peak=peak)
        parse, cold, cold2, warm = times["parse"], times["cold"], times["cold2"], times["warm"]
        row("bare libcst.parse_module, 1 process (yardstick)", parse, "1", "")
        row("dtype-lint check -j 1 --no-cache (cold)", cold, f"{cold / parse:.2f} × parse", "≤ 0.5 × parse")
        row("dtype-lint check -j 2 --no-cache (cold)", cold2, f"{cold2 / cold:.2f} × cold -j 1", "≤ 0.65")
        row("dtype-lint check, warm cache", warm, f"{warm / cold:.3f} × cold -j 1", "≤ 0.05")
        row("warm cache, text + summary + colour", times["warm_text"], f"{times['warm_text'] / warm:.2f} × warm json", "≤ 1.05")
        row("peak RSS, dtype-lint -j 2 incl. workers", None, f"{peak[0] / 2**20:.0f} MB", "≤ 250 MB (whole)")
        if name != "medium":
            return _finish(rows, row, lint, tmp, results, parse, cold, lines)
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
        ruff = anchors / "bin" / "ruff"
        if ruff.exists():
            rt = timed([str(ruff), "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", *dirs], repeat)
            row("ruff check --select ALL --no-cache (anchor)", rt, f"{rt / parse:.2f} × parse", "")
        torchfix = anchors / "bin" / "torchfix"
        if torchfix.exists():
            tf = timed([str(torchfix), *dirs], 1)
            # TorchFix uses every core, as dtype-lint does by default (-j 2 here).
            row("TorchFix CLI (anchor, 1 run)", tf,
                f"dtype-lint -j 2 {tf / cold2:.1f}×, -j 1 {tf / cold:.1f}× faster", "≥ 20×")
        else:
            row("TorchFix CLI (anchor)", None, "not installed", "")
        return _finish(rows, row, lint, tmp, results, parse, cold, lines)


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


def rounds(commands: dict, repeat: int, peak_of: str, peak: list[int]) -> dict[str, float]:
    """Median time of each command, running them in turn round after round, so that a
    change in the machine's load falls on every row alike (the ratios are what count)."""
    samples: dict[str, list[float]] = {key: [] for key in commands}
    for _ in range(repeat):
        for key, (command, stdout) in commands.items():
            for _ in range(SAMPLES_PER_ROUND.get(key, 1)):
                samples[key].append(timed(command, 1, stdout=stdout, peak=peak if key == peak_of else None))
    return {key: statistics.median(values) for key, values in samples.items()}


def _finish(rows, row, lint, tmp, results, parse, cold, lines) -> tuple[list, bool]:
    """The prefilter-off run (two processes: its output is the same as one's) and the
    comparison of its findings with the cold run's."""
    off_results = os.path.join(tmp, "off.json")
    off = timed(lint + ["-j", "2", "--no-cache", "--no-prefilter"], 1, stdout=off_results)
    row("dtype-lint -j 2 --no-prefilter (1 run)", off, f"{off / parse:.2f} × parse", "")
    same = Path(results).read_bytes() == Path(off_results).read_bytes()
    count = len(json.loads(Path(results).read_text()))
    row(f"findings, prefilter on vs off ({count})", None, "identical" if same else "DIFFERENT", "identical")
    row("cold -j 1 per 1k lines", cold / lines * 1000, "", "whole ≤ 1.3 × medium")
    return rows, same


def _per_line_ratio(rows: list) -> None:
    """Where both sets ran, the whole corpus's cold time per line as a multiple of the
    medium pair's (bigger files must not cost more per line)."""
    at = {label.split(":", 1)[0]: i for i, (label, name, *_) in enumerate(rows) if name == "cold -j 1 per 1k lines"}
    if "medium" in at and "whole" in at:
        label, name, value, _, target = rows[at["whole"]]
        rows[at["whole"]] = (label, name, value, f"{value / rows[at['medium']][2]:.2f} × medium", target)


def timed(command: list[str], repeat: int, stdout: str | None = None, peak: list[int] | None = None) -> float:
    """Median wall time; ``peak`` gets the largest summed RSS of the process tree."""
    times = []
    for _ in range(repeat):
        sink = open(stdout, "wb") if stdout else subprocess.DEVNULL
        start = time.perf_counter()
        # Not from the repository: `python -m` would put it first on sys.path, ahead of
        # a PYTHONPATH that points at a snapshot of the package being measured.
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
        sampler = _RssSampler(proc.pid) if peak is not None else None
        proc.wait()
        times.append(time.perf_counter() - start)
        if sampler is not None:
            peak[0] = max(peak[0], sampler.stop())
        if stdout:
            sink.close()
    return statistics.median(times)


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
