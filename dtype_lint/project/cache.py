"""The results cache: a file's findings, keyed by its content, path, config and the tool.

A warm run only reads and hashes each file and reads one small JSON entry per file; it
imports neither LibCST nor the rules. Entries live in ``.dtype_lint_cache/`` beside the
configuration (``--cache-dir`` elsewhere, ``--no-cache`` off), a folder that ignores
itself in git. Only files that were linted are stored; one that could not be read or
parsed is tried again on the next run. The key covers the file's bytes, its path (findings carry it, and
``per-file-ignores`` depend on it), ``Config.fingerprint()``, the version and the
source of the package itself (so editing a rule invalidates results without a version
bump). Writes go to a temporary file renamed into place, so a reader never sees half an
entry; an entry that cannot be read or decoded counts as a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from dtype_lint import __version__
from dtype_lint.core.finding import Edit, Finding, Fix, Step

DEFAULT_DIR = ".dtype_lint_cache"
_FORMAT = 4  # bump when the entry layout changes


def _package_digest() -> str:
    """Names, sizes and modification times of the package's own modules."""
    root = Path(__file__).resolve().parent.parent  # the dtype_lint package
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(root.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


class Cache:
    """Findings (or the parse error) of files, stored under ``folder``."""

    def __init__(self, folder: str, fingerprint: str) -> None:
        self.folder = folder
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{_FORMAT}\0{__version__}\0{_package_digest()}\0{fingerprint}".encode())
        self.salt = h.digest()
        self._ready = False
        self._digests: dict[str, str | None] = {}

    def key(self, path: str, data: bytes) -> str:
        h = hashlib.blake2b(self.salt, digest_size=20)
        h.update(os.fsencode(path))
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def _entry(self, key: str) -> str:
        return os.path.join(self.folder, key[:2], key[2:] + ".json")

    def get(self, key: str, path: str) -> list[Finding] | None:
        """The cached findings, or None on a miss, an unreadable entry, or an entry one of
        whose consulted files (another file's class, helper) has changed since."""
        try:
            with open(self._entry(key), "rb") as handle:
                entry = json.loads(handle.read())
            if any(self._digest(dep) != digest for dep, digest in entry["deps"].items()):
                return None
            return [_finding(path, f) for f in entry["findings"]]
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None

    def _digest(self, path: str) -> str | None:
        """A consulted file's content digest now (as core.model computes it), worked out
        once per run however many results consulted it."""
        if path not in self._digests:
            try:
                with open(path, "rb") as handle:
                    self._digests[path] = hashlib.blake2b(handle.read(), digest_size=16).hexdigest()
            except OSError:
                self._digests[path] = None
        return self._digests[path]

    def put(self, key: str, findings: list[Finding], deps: dict[str, str] | None = None) -> None:
        """Store a result with the digests of the files it consulted; a cache that cannot
        be written only costs speed."""
        self._write(self._entry(key), {"findings": [_row(f) for f in findings], "deps": deps or {}})

    def _write(self, target: str, entry: dict) -> None:
        """Write an entry through a temporary file renamed into place."""
        try:
            self._prepare(os.path.dirname(target))
            fd, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(entry, handle, separators=(",", ":"))
                os.replace(temporary, target)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:
            pass

    def get_summary(self, key: str) -> dict | None:
        """A file's summary for the project model (core.model), stored by content: a
        run that lints a file again need not read the files it consulted again."""
        try:
            with open(self._summary_entry(key), "rb") as handle:
                data = json.loads(handle.read())
            return data if isinstance(data, dict) else None
        except (OSError, ValueError):
            return None

    def put_summary(self, key: str, data: dict) -> None:
        self._write(self._summary_entry(key), data)

    def _summary_entry(self, key: str) -> str:
        h = hashlib.blake2b(self.salt, digest_size=20)
        h.update(key.encode())
        name = h.hexdigest()
        return os.path.join(self.folder, "summaries", name[:2], name[2:] + ".json")

    def _prepare(self, subfolder: str) -> None:
        if not self._ready:
            os.makedirs(self.folder, exist_ok=True)
            ignore = os.path.join(self.folder, ".gitignore")
            if not os.path.exists(ignore):
                with open(ignore, "w", encoding="utf-8") as handle:
                    handle.write("# Created by dtype-lint; the whole folder is a cache.\n*\n")
            self._ready = True
        os.makedirs(subfolder, exist_ok=True)


def _row(f: Finding) -> list:
    fix = None
    if f.fix is not None:
        fix = [f.fix.applicability, [[e.line, e.column, e.end_line, e.end_column, e.content] for e in f.fix.edits]]
    flow = [[s.path, s.line, s.column, s.message] for s in f.flow]
    return [f.line, f.column, f.end_line, f.end_column, f.code, f.name, f.message, fix, flow, f.confidence, f.basis]


def _finding(path: str, row: list) -> Finding:
    line, column, end_line, end_column, code, name, message, fix, flow, confidence, basis = row
    parsed = None
    if fix is not None:
        parsed = Fix(fix[0], tuple(Edit(*map(int, e[:4]), str(e[4])) for e in fix[1]))
    steps = tuple(Step(str(p), int(ln), int(col), str(msg)) for p, ln, col, msg in flow)
    return Finding(path, int(line), int(column), int(end_line), int(end_column), str(code), str(name),
                   str(message), parsed, flow=steps, confidence=str(confidence), basis=str(basis))
