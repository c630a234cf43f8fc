"""Real notebooks: dtype-lint reads them without an internal error, and what a notebook costs.

    python benchmarks/notebooks.py               # fetches the notebooks into .bench-cache
    python benchmarks/notebooks.py --repeat 5

The notebooks are those that pinned packages ship with their sources on PyPI (flax's
documentation, pytorch-ignite's examples), fetched with ``pip download --no-binary`` into
``.bench-cache/notebooks`` and never copied into the repository. Printed: how many
notebooks and code cells were read, internal errors (the target is 0), cells that do not
parse as Python even with IPython syntax masked (reported one by one, not errors of
ours), and findings; then the speed row: each notebook's code cells are also written as
a ``.py`` file of the same module text, and both folders are linted cold (``-j 1
--no-cache``) in turn, ``--repeat`` times; the medians per 1,000 code lines and their
ratio are printed (the notebook's cost over the ``.py``'s is reading the JSON and
masking IPython syntax).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".bench-cache" / "notebooks"
PINNED = ("flax==0.12.8", "pytorch-ignite==0.5.3")


def fetch() -> Path:
    notebooks = CACHE / "ipynb"
    if notebooks.is_dir() and any(notebooks.rglob("*.ipynb")):
        return notebooks
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                    "--dest", str(CACHE), *PINNED], check=True)
    for archive in CACHE.glob("*.tar.gz"):
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".ipynb")]
            tar.extractall(notebooks, members=members, filter="data")
    return notebooks


def lint(folder: Path) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dtype_lint", "check", str(folder), "-j", "1", "--no-cache",
                           "--output-format", "json"], capture_output=True, text=True)
    return time.perf_counter() - start, proc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="cold runs of each folder (median)")
    args = parser.parse_args()
    from dtype_lint.project.notebooks import read_notebook

    notebooks = fetch()
    paths = sorted(notebooks.rglob("*.ipynb"))
    cells = lines = 0
    with tempfile.TemporaryDirectory() as scratch:
        scripts = Path(scratch)
        for number, path in enumerate(paths):
            source = read_notebook(path.read_bytes())
            cells += len(source.cells.cells)
            lines += source.text.count("\n") + 1
            (scripts / f"nb{number}.py").write_text(source.text, encoding="utf-8")
        _, proc = lint(notebooks)
        findings = json.loads(proc.stdout)
        internal = [line for line in proc.stderr.splitlines() if "internal error" in line]
        unparsed = [line for line in proc.stderr.splitlines() if ":cell " in line and "internal error" not in line]
        times: dict[str, list[float]] = {"ipynb": [], "py": []}
        for _ in range(args.repeat):
            times["ipynb"].append(lint(notebooks)[0])
            times["py"].append(lint(scripts)[0])
    per_k = {kind: statistics.median(values) / lines * 1000 for kind, values in times.items()}
    print(f"| notebooks (from {', '.join(PINNED)}) | {len(paths)} files, {cells} code cells, {lines} lines |")
    print("|---|---|")
    print(f"| internal errors | {len(internal)} (target 0) |")
    print(f"| cells that do not parse as Python (reported one by one) | {len(unparsed)} |")
    print(f"| findings | {len(findings)} |")
    print(f"| cold -j 1, per 1k code lines: .ipynb | {per_k['ipynb'] * 1000:.1f} ms |")
    print(f"| cold -j 1, per 1k code lines: the same code as .py | {per_k['py'] * 1000:.1f} ms |")
    print(f"| .ipynb / .py | {per_k['ipynb'] / per_k['py']:.2f} × |")
    for line in internal:
        print(line, file=sys.stderr)
    return 1 if internal else 0


if __name__ == "__main__":
    raise SystemExit(main())
