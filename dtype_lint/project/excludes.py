"""`exclude` patterns, matched with gitignore semantics.

pathspec does the matching, but importing it costs about 65 ms (a third of a run
answered from the cache: its `deprecated` decorators import asyncio). Most configurations,
the default one included, hold only *name globs*: patterns without a slash (but for a
trailing one, meaning "directories only"), `**`, brackets, escapes or negation. Git
matches such a pattern against the name of every folder and file on the path, with `*`
and `?` never crossing a slash, which is what `fnmatch` does on one name; for those the
patterns are matched here, and pathspec is imported only for anything else.
`tests/test_excludes.py` checks that both agree on generated patterns and paths.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Iterable

_NOT_A_NAME_GLOB = re.compile(r"[/\\\[\]!#]|\*\*|^\s|\s$")


def is_name_glob(pattern: str) -> bool:
    body = pattern[:-1] if pattern.endswith("/") else pattern
    return bool(body) and not _NOT_A_NAME_GLOB.search(body)


class Excludes:
    """``match_file(path)``: whether a root-relative posix path (a folder's ends with
    ``/``) is excluded, as ``pathspec.GitIgnoreSpec(patterns).match_file`` says."""

    def __init__(self, patterns: Iterable[str]) -> None:
        patterns = tuple(patterns)
        self._spec = None
        if not all(is_name_glob(p) for p in patterns):
            import pathspec

            self._spec = pathspec.GitIgnoreSpec.from_lines(patterns)
            return
        any_name = [fnmatch.translate(p) for p in patterns if not p.endswith("/")]
        folder_only = [fnmatch.translate(p[:-1]) for p in patterns if p.endswith("/")]
        self._any = re.compile("|".join(any_name)) if any_name else None
        self._folder = re.compile("|".join(folder_only)) if folder_only else None

    def match_file(self, path: str) -> bool:
        if self._spec is not None:
            return self._spec.match_file(path)
        names = path.rstrip("/").split("/")
        folders = names if path.endswith("/") else names[:-1]
        return bool(
            (self._any is not None and any(self._any.match(n) for n in names))
            or (self._folder is not None and any(self._folder.match(n) for n in folders))
        )
