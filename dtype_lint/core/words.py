"""Names read as words: what the concepts' conventions match (a name's words, globs)."""

from __future__ import annotations

import fnmatch
import re
from typing import Iterable

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def words_of(name: str) -> set[str]:
    """The lower-case words of a snake_case or CamelCase name."""
    return {w.lower() for part in name.split("_") for w in _WORD.findall(part)}


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    """Whether ``name`` matches one of the glob ``patterns``."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
