"""How long the language server takes to lint a large file after a change.

    python benchmarks/server_latency.py                    # fetches the corpus
    python benchmarks/server_latency.py --corpus DIR --repeat 15

The files are the two largest of each package of the medium pair (pytorch-lightning and
flax) in the perf corpus (fetched as by ``speed.py``). For each, a real client (pygls's)
starts ``dtype-lint server`` over stdio, opens the file, then sends ``--repeat`` edits
(one line inserted in the middle, different each time, so nothing is answered from the
server's last result) and waits for the diagnostics of each. Printed per file, as
medians: the time from the change to its diagnostics less the server's debounce (the
wait for the typing to pause, which is not linting), and, for comparison, the same lint
in this process without the protocol. The first open of the first file pays for what a
fresh server imports on first use; it is a row of its own. Target: a 2,000-line file under
150 ms after a change.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from speed import MEDIUM, ROOT, fetch_corpus
from dtype_lint.frontends.server.app import DEBOUNCE_SECONDS
from dtype_lint.frontends.server.documents import Linter

TARGET_MS = 150


def largest(corpus: Path, per_package: int = 2) -> list[Path]:
    chosen = []
    for package in MEDIUM:
        files = sorted((corpus / package).rglob("*.py"), key=lambda p: p.read_bytes().count(b"\n"))
        chosen += files[-per_package:]
    return chosen


def edited(text: str, n: int) -> str:
    """The text with a comment line inserted before its middle line: a different text
    that still parses (inside a string literal, it only changes the string)."""
    lines = text.split("\n")
    middle = len(lines) // 2
    return "\n".join(lines[:middle] + [f"# edit {n}"] + lines[middle:])


async def over_stdio(files: list[Path], repeat: int) -> tuple[float, dict[Path, list[float]]]:
    client = LanguageClient("server-latency", "1")
    arrived: dict[tuple[str, int], float] = {}
    waiting: dict[tuple[str, int], asyncio.Future] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(params: types.PublishDiagnosticsParams) -> None:
        key = (params.uri, params.version)
        arrived[key] = time.perf_counter()
        if key in waiting:
            waiting.pop(key).set_result(None)

    async def until(key: tuple[str, int]) -> float:
        if key not in arrived:
            waiting[key] = asyncio.get_running_loop().create_future()
            await asyncio.wait_for(waiting[key], 300)
        return arrived[key]

    await client.start_io(sys.executable, "-m", "dtype_lint", "server")
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    client.initialized(types.InitializedParams())
    first_open = 0.0
    times: dict[Path, list[float]] = {}
    for path in files:
        uri, text = path.as_uri(), path.read_text(encoding="utf-8")
        sent = time.perf_counter()
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 0, text)))
        opened = await until((uri, 0)) - sent
        first_open = first_open or opened
        for n in range(1, repeat + 1):
            change = types.TextDocumentContentChangeWholeDocument(edited(text, n))
            sent = time.perf_counter()
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(n, uri), [change]))
            times.setdefault(path, []).append(await until((uri, n)) - sent - DEBOUNCE_SECONDS)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return first_open, times


def in_process(path: Path, repeat: int) -> tuple[list[float], int]:
    linter, text = Linter(), path.read_text(encoding="utf-8")
    linter.lint("warm-up", str(path), text)
    times = []
    for n in range(1, repeat + 1):
        started = time.perf_counter()
        outcome = linter.lint(str(path), str(path), edited(text, n))
        times.append(time.perf_counter() - started)
    return times, len(outcome.findings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="an unpacked corpus (default: fetch into .bench-cache)")
    parser.add_argument("--repeat", type=int, default=15, help="changes per file (median)")
    args = parser.parse_args()
    corpus = args.corpus or fetch_corpus(ROOT / ".bench-cache" / "perf-corpus")
    files = largest(corpus)
    first_open, served = asyncio.run(over_stdio(files, args.repeat))
    print(f"| file | lines | findings | change → diagnostics, less the {DEBOUNCE_SECONDS * 1000:.0f} ms debounce "
          "| lint in process | target |")
    print("|---|---|---|---|---|---|")
    for path in files:
        local, findings = in_process(path, args.repeat)
        lines = path.read_bytes().count(b"\n")
        print(f"| {path.relative_to(corpus)} | {lines} | {findings} | {statistics.median(served[path]) * 1000:.0f} ms "
              f"| {statistics.median(local) * 1000:.0f} ms | {'< 150 ms' if lines <= 2000 else ''} |")
    print(f"| first open ({files[0].relative_to(corpus)}, a fresh server) | | | "
          f"{first_open * 1000:.0f} ms | | |")
    # Other work on the machine slows every row alike; say how much there was.
    print(f"\n{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} over the last minute")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
