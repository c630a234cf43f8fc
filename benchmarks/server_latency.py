"""How long the language server takes to answer an edit of a large file, timed by an
editor's client: VS Code's protocol library (``vscode-languageserver-protocol``), not
pygls.

    python benchmarks/server_latency.py                    # fetches the corpus and npm package
    python benchmarks/server_latency.py --corpus DIR --repeat 15

The files: timm's ``layers/pos_embed_sincos.py`` and the two largest files of each
package of the medium pair (pytorch-lightning and flax) in the perf corpus (fetched as by
``speed.py``). ``lsp_client.cjs`` (run by Node, with the npm package installed into
``.bench-cache/node``) starts ``dtype-lint server`` over stdio, opens each file and sends
``--repeat`` edits of two kinds, each a line inserted as an editor sends it (incremental
sync, as the server advertises): a comment line in the middle of the file, and a
statement at the top of the body of the function that holds the middle line (or the
middle line's own place, if no function does). Printed, as medians per file and kind:
the time from the change to its diagnostics less the server's 150 ms pause (the wait for
the typing to stop, which is not linting); the time to answer a hover sent 20 ms after
that pause, while the change is being linted (and how many of them were answered before
the lint ended); and, for comparison, a whole lint of the same text in this process.
Targets: under 150 ms from change to diagnostics on timm's 1,656-line file, and hovers
under 50 ms during a lint.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from speed import MEDIUM, ROOT, fetch_corpus
from dtype_lint.core.engine import lint_source
from dtype_lint.frontends.server.app import DEBOUNCE_SECONDS
from dtype_lint.project.config import Config

TIMM = Path("timm") / "timm" / "layers" / "pos_embed_sincos.py"
CLIENT = Path(__file__).with_name("lsp_client.cjs")
PROTOCOL = "vscode-languageserver-protocol@3.17.5"
HOVER_AFTER_MS = 20


def largest(corpus: Path, per_package: int = 2) -> list[Path]:
    chosen = [corpus / TIMM]
    for package in MEDIUM:
        files = sorted((corpus / package).rglob("*.py"), key=lambda p: p.read_bytes().count(b"\n"))
        chosen += files[-per_package:]
    return chosen


def edits(text: str, kind: str, repeat: int) -> list[dict[str, object]]:
    """``repeat`` lines to insert (0-based line, text), each different, so that nothing
    is answered from the server's last result; each is inserted in the text left by the
    one before."""
    lines = text.split("\n")
    middle = len(lines) // 2
    if kind == "comment":
        return [{"line": middle, "insert": f"# edit {n}"} for n in range(1, repeat + 1)]
    holder = None
    for node in ast.walk(ast.parse(text)):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= middle + 1 <= node.end_lineno
                and node.body[0].lineno > node.lineno and (holder is None or node.lineno > holder.lineno)):
            holder = node
    at = holder.body[0] if holder is not None else None
    line = min([at.lineno] + [d.lineno for d in getattr(at, "decorator_list", ())]) - 1 if at else middle
    indent = " " * (at.col_offset if at else 0)
    return [{"line": line, "insert": f"{indent}_edit = {n}"} for n in range(1, repeat + 1)]


def node_client(cache: Path) -> tuple[list[str], dict[str, str]]:
    """The command that runs the client, and its environment (the package's folder)."""
    node = shutil.which("node")
    if node is None:
        raise SystemExit("node (Node.js 18 or later) is needed to run the client")
    modules = cache / "node_modules"
    if not (modules / "vscode-languageserver-protocol").is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-save", "--prefix", str(cache), PROTOCOL], check=True,
                       stdout=subprocess.DEVNULL)
    return [node, str(CLIENT)], {**os.environ, "NODE_PATH": str(modules)}


def over_stdio(files: list[Path], repeat: int) -> dict[tuple[Path, str], dict]:
    command, env = node_client(ROOT / ".bench-cache" / "node")
    plan = {"command": [sys.executable, "-m", "dtype_lint", "server"], "debounce_ms": DEBOUNCE_SECONDS * 1000,
            "hover_after_ms": HOVER_AFTER_MS, "files": []}
    keys = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for kind in ("comment", "statement"):
            plan["files"].append({"uri": path.as_uri(), "text": text, "edits": edits(text, kind, repeat)})
            keys.append((path, kind))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(plan, f)
    try:
        out = subprocess.run(command + [f.name], env=env, check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    return dict(zip(keys, (json.loads(line) for line in out.splitlines())))


def whole_lint(path: Path, repeat: int) -> float:
    """The median time of a whole lint of the file with a comment line added (no
    incremental lint: the engine alone)."""
    config, text = Config(), path.read_text(encoding="utf-8")
    codes = config.selected(str(path))
    lint_source(text, str(path), codes, config.options)  # warm up: imports
    times = []
    for edit in edits(text, "comment", repeat):
        lines = text.split("\n")
        changed = "\n".join(lines[:edit["line"]] + [str(edit["insert"])] + lines[edit["line"]:])
        started = time.perf_counter()
        lint_source(changed, str(path), codes, config.options)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="an unpacked corpus (default: fetch into .bench-cache)")
    parser.add_argument("--repeat", type=int, default=15, help="changes per file and kind (median)")
    args = parser.parse_args()
    corpus = args.corpus or fetch_corpus(ROOT / ".bench-cache" / "perf-corpus")
    files = largest(corpus)
    served = over_stdio(files, args.repeat)
    print(f"| file | lines | findings | edit | change → diagnostics, less the {DEBOUNCE_SECONDS * 1000:.0f} ms pause "
          "| hover during the lint (answered before it ended) | whole lint in process |")
    print("|---|---|---|---|---|---|---|")
    for path in files:
        lines = path.read_bytes().count(b"\n")
        local = whole_lint(path, args.repeat)
        for kind in ("comment", "statement"):
            result = served[path, kind]
            hover = (f"{statistics.median(result['hover_ms']):.0f} ms ({result['hover_during_lint']}/"
                     f"{len(result['change_ms'])})" if result["hover_ms"] else "lint over first")
            print(f"| {path.relative_to(corpus)} | {lines} | {result['findings']} | {kind} "
                  f"| {statistics.median(result['change_ms']):.0f} ms | {hover} | {local * 1000:.0f} ms |")
    first = served[files[0], "comment"]
    print(f"\nfirst open ({files[0].relative_to(corpus)}, a fresh server): {first['open_ms']:.0f} ms; "
          f"sync: {'incremental' if first['incremental'] else 'whole document'}")
    # Other work on the machine slows every row alike; say how much there was.
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} over the last minute")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
