"""Lint many files: read, decode, lint, and collect findings and per-file errors.

A file that cannot be read, decoded or parsed becomes a FileError with a one-line
reason; every other file is still linted.
"""

from __future__ import annotations

import dataclasses
import os
import stat

from dtype_lint.config import Config
from dtype_lint.discovery import discover
from dtype_lint.engine import LintError, Source, lint_source
from dtype_lint.finding import FileError, Finding

MAX_FILE_BYTES = 64 * 1024 * 1024


@dataclasses.dataclass
class FileResult:
    path: str
    findings: list[Finding]
    error: FileError | None = None
    source: Source | None = None
    data: bytes | None = None


@dataclasses.dataclass
class RunResult:
    findings: list[Finding]
    errors: list[FileError]
    files: int


def read_file(path: str) -> bytes:
    """The bytes of a regular file; LintError for anything else."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise LintError(f"cannot read: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise LintError("is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise LintError("not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise LintError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise LintError(f"cannot read: {exc.strerror}") from None


def lint_path(path: str, config: Config) -> FileResult:
    try:
        data = read_file(path)
        source = Source.from_bytes(data)
        findings = lint_source(source.text, path, config.rules_for(path), config.options)
    except LintError as exc:
        return FileResult(path, [], FileError(path, str(exc)))
    return FileResult(path, findings, source=source, data=data)


def lint_paths(paths: list[str], config: Config, force_exclude: bool = False) -> list[FileResult]:
    results = []
    for item in discover(paths, config.exclude_spec(), config.root, force_exclude):
        if isinstance(item, FileError):
            results.append(FileResult(item.path, [], item))
        else:
            results.append(lint_path(item, config))
    return results


def summarize(results: list[FileResult]) -> RunResult:
    findings = sorted(f for r in results for f in r.findings)
    errors = sorted((r.error for r in results if r.error), key=lambda e: e.path)
    return RunResult(findings, errors, len(results))
