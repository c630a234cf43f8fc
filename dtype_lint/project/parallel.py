"""Lint files in worker processes, with results in the order the files were given.

Spawn-safe: the worker is a module-level function that gets the config once, through
the pool's initializer, and lints a chunk of paths per task, so each task costs one
round trip. Workers import LibCST themselves; the parent never needs it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from dtype_lint.core import prefilter_switch

from dtype_lint.project.file_lint import FileResult, fewer_collections, lint_one
from dtype_lint.project.order import dependency_order

if TYPE_CHECKING:
    from dtype_lint.project.cache import Cache
    from dtype_lint.project.config import Config

# Below this many files a pool's start-up (a LibCST import per worker) costs more than
# it saves.
MIN_FILES_FOR_POOL = 8

_worker: tuple[Config, Cache | None, bool] | None = None


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def lint_files(paths: list[str], config: Config, jobs: int, cache: Cache | None, keep_source: bool) -> list[FileResult]:
    """One FileResult per path, in order; ``keep_source`` keeps the text for fixes."""
    if jobs <= 1 or len(paths) < MIN_FILES_FOR_POOL:
        results: list[FileResult | None] = [None] * len(paths)
        for index in dependency_order(paths, config.src):
            results[index] = lint_one(paths[index], config, cache, keep_source)
        return results  # type: ignore[return-value]  # every index is filled
    jobs = min(jobs, len(paths))
    # Largest files first, in small chunks, so that no worker is left with a big file
    # while the other has finished (file sizes vary a hundredfold).
    order = sorted(range(len(paths)), key=lambda i: -_size(paths[i]))
    size = max(1, min(8, len(paths) // (jobs * 16)))
    chunks = [order[i:i + size] for i in range(0, len(order), size)]
    results = [None] * len(paths)
    import multiprocessing  # only when a pool is needed: not in a run answered from the cache

    with multiprocessing.get_context().Pool(
        jobs, initializer=_init, initargs=(config, cache, keep_source, prefilter_switch.enabled())
    ) as pool:
        for chunk, linted in zip(chunks, pool.imap(_lint_chunk, [[paths[i] for i in c] for c in chunks])):
            for index, result in zip(chunk, linted):
                results[index] = result
    return results  # type: ignore[return-value]  # every index is filled


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # linting it reports why


def _init(config: Config, cache: Cache | None, keep_source: bool, use_prefilter: bool) -> None:
    global _worker
    fewer_collections()  # a forked worker has it already; a spawned one does not
    _worker = (config, cache, keep_source)
    os.environ[prefilter_switch.ENV_SWITCH] = "1" if use_prefilter else "0"


def _lint_chunk(paths: list[str]) -> list[FileResult]:
    assert _worker is not None
    config, cache, keep_source = _worker
    return [lint_one(path, config, cache, keep_source) for path in paths]
