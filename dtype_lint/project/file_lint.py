"""Lint one file of a run: read it, decode it, lint it, and keep its findings in the cache.

A file that cannot be read, decoded or parsed becomes a FileError with a one-line
reason. The worker processes (:mod:`dtype_lint.project.parallel`) call this module, and so
does the run itself (:mod:`dtype_lint.project.runner`) for the cache and for one process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import stat
from typing import Iterator

from dtype_lint.core.engine import LintError, Source, lint_source
from dtype_lint.core.finding import FileError, Finding
from dtype_lint.project.cache import Cache
from dtype_lint.project.config import Config
from dtype_lint.project.notebooks import NotebookSource, is_notebook, read_notebook

# LibCST needs about a minute and 500 MB per MiB of dense source; the largest hand-written
# file in torch, jax and flax is 1.4 MB. Larger files are generated, and reported unlinted.
MAX_FILE_BYTES = 4 * 1024 * 1024
# A notebook's outputs (plots, tables) can weigh far more than its code: the file may be
# larger, and the limit above applies to the code cells once they are read.
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
INTERNAL_ERROR = "internal error"


@dataclasses.dataclass
class FileResult:
    path: str
    findings: list[Finding]
    error: FileError | None = None
    source: Source | NotebookSource | None = None
    data: bytes | None = None
    # Parts that could not be linted while the rest was (a notebook cell that does not parse).
    notes: list[FileError] = dataclasses.field(default_factory=list)
    # The other files the result consulted (the project model), by content digest: the
    # cached result holds while they do.
    deps: dict[str, str] = dataclasses.field(default_factory=dict)
    from_cache: bool = False


def read_file(path: str) -> bytes:
    """The bytes of a regular file; LintError for anything else.

    The file is opened non-blocking and checked through its descriptor, so a FIFO or a
    device (even one swapped in after discovery) is refused instead of hanging the run.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise LintError(f"cannot read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise LintError("is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise LintError("not a regular file")
        limit = MAX_NOTEBOOK_BYTES if is_notebook(path) else MAX_FILE_BYTES
        if st.st_size > limit:
            raise LintError(f"{st.st_size / 2**20:.1f} MiB is over the {limit // 2**20} MiB limit for one file; not linted")
        try:
            return handle.read()
        except OSError as exc:
            raise LintError(f"cannot read: {exc.strerror}") from None


def decode(path: str, data: bytes) -> Source | NotebookSource:
    """The text to lint: the file's, or a notebook's code cells as one module."""
    if not is_notebook(path):
        return Source.from_bytes(data)
    notebook = read_notebook(data)
    if len(notebook.text) > MAX_FILE_BYTES:
        raise LintError(f"its code cells hold {len(notebook.text) / 2**20:.1f} MiB, over the "
                        f"{MAX_FILE_BYTES // 2**20} MiB limit for one file's code; not linted")
    return notebook


def lint_data(path: str, data: bytes, config: Config) -> FileResult:
    """Lint a file's bytes (read, or about to be written by a fix)."""
    view = config.view(path)
    consulted = view.model.record()
    try:
        source = decode(path, data)
        learn = None if isinstance(source, NotebookSource) else (
            lambda tree: view.model.learn(path, data, source.text, tree))
        findings = lint_source(source.text, path, config.selected(path), config.options, view=view, on_tree=learn)
    except LintError as exc:
        return FileResult(path, [], exc.at(path))
    except Exception as exc:  # a bug of ours must cost one file, not the whole run
        reason = f"{INTERNAL_ERROR}: {type(exc).__name__}: {exc}; please report it"
        return FileResult(path, [], FileError(path, reason))
    own = os.path.abspath(path)
    deps = {p: d for p in consulted if p != own and (d := view.model.digest(p)) is not None}
    if isinstance(source, NotebookSource):
        findings = [dataclasses.replace(f, cells=source.cells) for f in findings]
        return FileResult(path, findings, source=source, data=data, notes=source.errors(path), deps=deps)
    return FileResult(path, findings, source=source, data=data, deps=deps)


def lint_path(path: str, config: Config) -> FileResult:
    try:
        data = read_file(path)
    except LintError as exc:
        return FileResult(path, [], exc.at(path))
    return lint_data(path, data, config)


GC_THRESHOLD = 10_000
# The young generation is collected every this many files; the older (what outlived a
# file: the project model's summaries, caches) every OLDER_EVERY files, and everything
# every OLDEST_EVERY files. Collecting the young after every file walked the objects that
# outlive it once more for nothing: over the whole perf corpus, the collections took 3.8 s
# collecting after every file and 1.7 s every 8, with the same peak memory.
YOUNG_EVERY = 8
OLDER_EVERY = 128
OLDEST_EVERY = 1024
_files_linted = 0


def fewer_collections() -> None:
    """Run CPython's cycle collector less often between files (see
    :func:`collected_after`). Only in dtype-lint's own processes (CLI, its workers, the
    mypy plugin's lint worker), never in flake8's or mypy's."""
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])


@contextlib.contextmanager
def collected_after() -> Iterator[None]:
    """Lint one file with the cycle collector paused, and collect once after it.

    A file's trees (``ast``, LibCST) are allocated at the start and freed at the end; a
    collector that runs meanwhile walks the same live trees again and again for nothing
    (a sixth of a cold run, measured). Most of them are freed by reference counting as
    soon as the file is done (the prefilter and the rules' context cut their cycles);
    what is left in cycles is collected here, the young generation every YOUNG_EVERY
    files, the older every OLDER_EVERY files and all every OLDEST_EVERY. Only in
    dtype-lint's own processes, as for :func:`fewer_collections`."""
    global _files_linted
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        _files_linted += 1
        for generation, every in ((2, OLDEST_EVERY), (1, OLDER_EVERY), (0, YOUNG_EVERY)):
            if _files_linted % every == 0:
                gc.collect(generation)
                break
        if paused:
            gc.enable()


def cached(path: str, cache: Cache, keep_source: bool) -> FileResult | None:
    """The result from the cache, or None when the file must be linted."""
    try:
        data = read_file(path)
    except LintError:
        return None  # linting reports why
    findings = cache.get(cache.key(path, data), path)
    if findings is None:
        return None
    if not findings or not (keep_source or is_notebook(path)):
        return FileResult(path, findings, from_cache=True)
    try:
        source = decode(path, data)  # a notebook's findings need its cells to be shown
    except LintError:
        return None
    if isinstance(source, NotebookSource):
        findings = [dataclasses.replace(f, cells=source.cells) for f in findings]
    if keep_source:
        return FileResult(path, findings, source=source, data=data, from_cache=True)
    return FileResult(path, findings, from_cache=True)


def lint_one(path: str, config: Config, cache: Cache | None, keep_source: bool) -> FileResult:
    """Lint one file (see :func:`lint_path`) and store its findings in ``cache``, where
    the project model keeps the summaries it reads too."""
    if cache is not None:
        config.view(path).model.store = cache
    with collected_after():
        result = lint_path(path, config)
    if cache is not None and result.error is None and not result.notes and result.data is not None:
        cache.put(cache.key(path, result.data), result.findings, result.deps)
    if not keep_source:
        result.source = result.data = None  # not worth sending back from a worker
    return result
