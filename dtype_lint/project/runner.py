"""Lint many files: find them, answer what the cache can, lint the rest, collect the results.

A file that cannot be read, decoded or parsed becomes a FileError with a one-line
reason; every other file is still linted. Results come from the cache when it has
them (:mod:`dtype_lint.project.cache`), else from worker processes (:mod:`dtype_lint.project.parallel`),
and are the same either way.
"""

from __future__ import annotations

import dataclasses

from dtype_lint.core.finding import FileError, Finding
from dtype_lint.project.cache import Cache
from dtype_lint.project.config import Config
from dtype_lint.project.discovery import discover
from dtype_lint.project.file_lint import FileResult, cached, fewer_collections
from dtype_lint.project.parallel import lint_files


@dataclasses.dataclass
class RunResult:
    findings: list[Finding]
    errors: list[FileError]
    files: int


def lint_paths(
    paths: list[str], config: Config, force_exclude: bool = False, jobs: int = 1,
    cache: Cache | None = None, keep_source: bool = False,
) -> list[FileResult]:
    """One FileResult per discovered file (or path error), in discovery order.

    Files whose content, path and config are in ``cache`` are answered from it; the
    rest are linted by ``jobs`` processes. ``keep_source`` keeps each file's text and
    bytes where a fix may need them.
    """
    fewer_collections()
    results: list[FileResult | None] = []
    pending: list[tuple[int, str]] = []
    for item in discover(paths, config.include_spec(), config.exclude_spec(), config.root, force_exclude):
        if isinstance(item, FileError):
            results.append(FileResult(item.path, [], item))
            continue
        results.append(cached(item, cache, keep_source) if cache is not None else None)
        if results[-1] is None:
            pending.append((len(results) - 1, item))
    linted = lint_files([path for _, path in pending], config, jobs, cache, keep_source)
    for (index, _), result in zip(pending, linted):
        results[index] = result
    return [r for r in results if r is not None]


def summarize(results: list[FileResult]) -> RunResult:
    findings = sorted(f for r in results for f in r.findings)
    errors = sorted((e for r in results for e in ([r.error] if r.error else []) + r.notes), key=lambda e: e.path)
    return RunResult(findings, errors, len(results))
