"""Refuse sources that would crash LibCST's native parser instead of raising an error,
and parse with CPython's ``ast`` without letting a bad file escape as an exception.

LibCST's parser overflows its stack (a segfault that takes the whole run down) on
expressions nested a few thousand levels deep, which CPython itself rejects. Files that
look deep by a cheap measure are first compiled by CPython, whose parser fails cleanly.
"""

from __future__ import annotations

import ast
import itertools
import re
import warnings

_NOT_BRACKET = re.compile(r"[^()\[\]{}]+")
# A line of 2,000 characters or more, tried only where a line starts: unanchored, the
# search tries every position and costs a line's length at each.
_LONG_LINE = re.compile(r"(?:^|\r)[^\r\n]{2000}", re.MULTILINE)
# CPython accepts at most 200 nested brackets; below ~100 LibCST is known to cope.
_SAFE_DEPTH = 100
_STEP = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def looks_deep(text: str) -> bool:
    """Whether the text might nest deeper than LibCST can parse safely."""
    if _LONG_LINE.search(text):
        return True  # long operator or attribute chains nest without brackets
    brackets = _NOT_BRACKET.sub("", text)
    if len(brackets) <= 2 * _SAFE_DEPTH:
        return False
    # map() of a dict lookup counts in C; a generator of conditionals steps through the
    # interpreter for each bracket
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets))) > _SAFE_DEPTH


def check_depth(text: str) -> str | None:
    """None if the text is safe to hand to LibCST, else the one-line reason it is not;
    CPython's SyntaxError (with its position) where CPython rejects the text."""
    if not looks_deep(text):
        return None
    try:
        compile(text, "<dtype-lint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (RecursionError, MemoryError):
        return "too deeply nested to parse"
    except ValueError as exc:  # e.g. NUL bytes, caught earlier but never crash
        return str(exc)
    return None


def parse_quietly(source: str | bytes) -> ast.Module | None:
    """The source's ``ast``, or None where CPython rejects it; its SyntaxWarnings are
    the linted file's, not ours to print."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
