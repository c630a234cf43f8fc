"""The results cache: a file's findings, keyed by its content, path, config and the tool.

A warm run only reads and hashes each file and reads one small JSON entry per file; it
imports neither LibCST nor the rules. Entries live in ``.dtype_lint_cache/`` beside the
configuration (``--cache-dir`` elsewhere, ``--no-cache`` off), a folder that ignores
itself in git. Only files that were linted are stored; one that could not be read or
parsed is tried again on the next run. The key covers the file's bytes, its path (findings carry it, and
``per-file-ignores`` depend on it), ``Config.fingerprint()``, the version and the
source of the package itself (so editing a rule invalidates results without a version
bump). Writes go to a temporary file renamed into place, so a reader never sees half an
entry; an entry that cannot be read or decoded counts as a miss, and is written again.

The folder may come with the repository being linted, so nothing in it is trusted: a
cache folder that is a symbolic link is refused (:func:`cache_refused`), a symbolic
link inside it is never followed (the entry is neither read nor written), an entry is
read only when it is a small regular file, and the files an entry says it consulted are
hashed only when they are regular files the project model would have read.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

from dtype_lint import __version__
from dtype_lint.core.finding import Edit, Finding, Fix, Step
from dtype_lint.core.reading import read_small

DEFAULT_DIR = ".dtype_lint_cache"
_FORMAT = 4  # bump when the entry layout changes
# An entry holds one file's findings (of a file of at most 4 MiB): a larger one is not ours.
MAX_ENTRY_BYTES = 32 * 1024 * 1024
# The project model summarises files up to this size (core.model.project.MAX_SUMMARY_BYTES,
# not imported: a warm run imports no more than this module); a larger consulted file
# was never one.
MAX_CONSULTED_BYTES = 2 * 1024 * 1024


def cache_refused(folder: str) -> str | None:
    """Why the cache folder cannot be used, or None: a symbolic link would have every
    entry written wherever it leads, outside the folder chosen."""
    if os.path.islink(folder):
        return (f"the cache folder {folder} is a symbolic link; not using a cache "
                "(--cache-dir names another folder, --no-cache runs without one)")
    return None


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
        self.folder = os.path.normpath(folder)
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{_FORMAT}\0{__version__}\0{_package_digest()}\0{fingerprint}".encode())
        self.salt = h.digest()
        self._ready = False
        self._digests: dict[str, str | None] = {}
        self._folders: dict[str, bool] = {}  # a subfolder: whether it is a real folder (no link)

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
            entry = self._read(self._entry(key))
            if any(self._digest(dep) != digest for dep, digest in entry["deps"].items()):
                return None
            return [_finding(path, f) for f in entry["findings"]]
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError):
            return None

    def _read(self, target: str):
        """An entry's JSON; OSError where it is not a small regular file in a real folder."""
        data = read_small(target, MAX_ENTRY_BYTES, follow=False) if self._real(os.path.dirname(target)) else None
        if data is None:
            raise OSError(f"{target}: no entry")
        return json.loads(data)

    def _digest(self, path: str) -> str | None:
        """A consulted file's content digest now (as core.model computes it), worked out
        once per run however many results consulted it."""
        if path not in self._digests:
            data = read_small(path, MAX_CONSULTED_BYTES) if isinstance(path, str) else None
            self._digests[path] = None if data is None else hashlib.blake2b(data, digest_size=16).hexdigest()
        return self._digests[path]

    def put(self, key: str, findings: list[Finding], deps: dict[str, str] | None = None) -> None:
        """Store a result with the digests of the files it consulted; a cache that cannot
        be written only costs speed."""
        self._write(self._entry(key), {"findings": [_row(f) for f in findings], "deps": deps or {}})

    def _write(self, target: str, entry: dict) -> None:
        """Write an entry through a temporary file renamed into place."""
        try:
            self._prepare(os.path.dirname(target))
            # A new file, renamed over the entry: a link planted at the entry's name is
            # replaced, never written through.
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
            data = self._read(self._summary_entry(key))
            return data if isinstance(data, dict) else None
        except (OSError, ValueError, RecursionError):
            return None

    def put_summary(self, key: str, data: dict) -> None:
        self._write(self._summary_entry(key), data)

    def _summary_entry(self, key: str) -> str:
        h = hashlib.blake2b(self.salt, digest_size=20)
        h.update(key.encode())
        name = h.hexdigest()
        return os.path.join(self.folder, "summaries", name[:2], name[2:] + ".json")

    def _prepare(self, subfolder: str) -> None:
        """Make the folders down to ``subfolder``; OSError where one is a link or not a
        folder (the entry is then not written)."""
        if not self._ready:
            self._make(self.folder)
            try:  # created only where nothing is: an existing name, even a dangling link, is left
                fd = os.open(os.path.join(self.folder, ".gitignore"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write("# Created by dtype-lint; the whole folder is a cache.\n*\n")
            self._ready = True
        parts = os.path.relpath(subfolder, self.folder).split(os.sep)
        for depth in range(1, len(parts) + 1):
            self._make(os.path.join(self.folder, *parts[:depth]))

    def _make(self, folder: str) -> None:
        if self._folders.get(folder):
            return
        if folder == self.folder:
            os.makedirs(folder, exist_ok=True)  # the folders above it are the user's path
        else:
            try:
                os.mkdir(folder)  # in a folder found real just before
            except FileExistsError:
                pass
        self._folders.pop(folder, None)
        if not self._real(folder):
            raise OSError(f"{folder}: not a folder of the cache")

    def _real(self, folder: str) -> bool:
        """Whether ``folder`` and every folder between it and the cache's are folders,
        not symbolic links (asked once per run)."""
        if folder not in self._folders:
            try:
                real = stat.S_ISDIR(os.lstat(folder).st_mode)
            except OSError:
                real = False
            if real and folder != self.folder:
                parent = os.path.dirname(folder)
                real = len(parent) >= len(self.folder) and self._real(parent)
            self._folders[folder] = real
        return self._folders[folder]


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
