"""The mypy plugin's lint worker: the LibCST engine in a process of its own.

Importing LibCST and linting cost the plugin about as much as mypy's own recheck of a
few edited files. The plugin starts this worker with the first file of the user's that
mypy parses (a run that only reads its cache starts none) and hands it each such file as
soon as mypy has parsed it (``get_additional_deps``), so that the worker imports LibCST
and lints while mypy loads the rest of the graph, analyses and type-checks; the plugin
collects the findings when mypy finishes the file. With a single usable core the plugin
lints in its own process instead.

Protocol: one path per line on stdin; one JSON object per line on stdout, in the same
order: ``{"path": ..., "findings": [[line, column, end_line, end_column, code, message,
flow], ...]}`` (``flow``: ``[[path, line, column, message], ...]``) or
``{"path": ..., "error": "..."}``. The worker exits at end of input. If it cannot be
started or dies, the plugin lints in its own process.
"""

from __future__ import annotations

import atexit
import collections
import json
import subprocess
import sys
import threading

from dtype_lint.frontends.mypy.lint import Reported

# How long the plugin waits for one file's findings before linting it itself.
WAIT_SECONDS = 60.0


class LintWorker:
    """The plugin's side: submit paths, collect their findings (None: lint it yourself)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._pending: collections.Counter[str] = collections.Counter()
        self._results: dict[str, list[Reported] | str] = {}
        self._changed = threading.Condition()
        self._dead = False

    def submit(self, path: str) -> None:
        if self._dead or "\n" in path:
            return
        try:
            if self._process is None:
                self._start()
            assert self._process is not None and self._process.stdin is not None
            self._process.stdin.write(path + "\n")
            self._process.stdin.flush()
        except (OSError, ValueError):
            self._dead = True
            return
        with self._changed:
            self._pending[path] += 1

    def collect(self, path: str) -> list[Reported] | None:
        """The worker's findings for a submitted path; None if it was not submitted, or
        the worker failed (the caller lints the file itself). Raises RuntimeError with
        the worker's message if linting the file raised there."""
        with self._changed:
            if path not in self._results and not self._pending[path]:
                return None
            self._changed.wait_for(lambda: path in self._results or self._dead, timeout=WAIT_SECONDS)
            if path not in self._results:
                return None
            result = self._results.pop(path)
        if isinstance(result, str):
            raise RuntimeError(f"lint worker: {result}")
        return [Reported.from_json(f) for f in result]

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.kill()  # nothing it has left to say is needed any more
            process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass

    def _start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "dtype_lint.frontends.mypy.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
        )
        # A thread drains the worker's output as it comes, so that neither side ever
        # blocks on a full pipe.
        threading.Thread(target=self._read, args=(self._process,), daemon=True).start()
        atexit.register(self.close)

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            try:
                message = json.loads(line)
                path = message["path"]
                result = message.get("error") or message["findings"]
            except (ValueError, KeyError, TypeError):
                break
            with self._changed:
                if self._pending[path]:
                    self._pending[path] -= 1
                    self._results[path] = result
                    self._changed.notify_all()
        with self._changed:
            self._dead = True
            self._changed.notify_all()


def main() -> None:
    # Everything a file may need, imported before the first path is read: that path
    # may already be waiting, and the rest follow while mypy loads the graph.
    import dtype_lint.core.prefilter  # noqa: F401
    import dtype_lint.rules.registry  # noqa: F401
    from dtype_lint.frontends.mypy.lint import engine_findings, read
    from dtype_lint.project.file_lint import collected_after, fewer_collections

    fewer_collections()

    for line in sys.stdin:
        path = line.rstrip("\n")
        try:
            text = read(path)
            with collected_after():
                found = [] if text is None else engine_findings(path, text)
            message: dict = {"path": path, "findings": found}
        except Exception as exc:  # reported by the plugin as its one internal-error note
            message = {"path": path, "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
