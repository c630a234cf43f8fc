"""Refuse sources that would crash LibCST's native parser instead of raising an error,
and parse with CPython's ``ast`` without letting a bad file escape as an exception.

LibCST's parser overflows its stack (a segfault that takes the whole run down) on
expressions nested a few thousand levels deep, which CPython itself rejects. Files that
look deep by a cheap measure are first compiled by CPython, whose parser fails cleanly.
Below CPython's limit (about 3,000 levels) LibCST's cost grows with the square of an
expression's depth: 2,900 nested lambdas take 1.6 GB, 2,900 chained subscripts 30 s.
So the depth of what CPython accepts is measured too, and a file whose deep statements
add up past :data:`_DEPTH_BUDGET` is refused: the deepest hand-written code among the
installed packages (sympy's generated constants) nests 229 levels.
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
# The sum of the squared depths of the statements deeper than _SAFE_DEPTH: one statement
# of 1,000 levels (LibCST: at most 330 MB and a second), or a hundred of 100.
_DEPTH_BUDGET = 1000 ** 2


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
        tree = compile(text, "<dtype-lint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (RecursionError, MemoryError):
        return "too deeply nested to parse"
    except ValueError as exc:  # e.g. NUL bytes, caught earlier but never crash
        return str(exc)
    cost = 0
    for statement in tree.body:
        levels = _depth(statement)
        cost += levels * levels if levels > _SAFE_DEPTH else 0
        if cost > _DEPTH_BUDGET:
            return f"too deeply nested to parse ({levels} levels at line {statement.lineno})"
    return None


def _depth(node: ast.AST) -> int:
    """How many levels deep the tree under ``node`` goes (without recursing: it may be
    thousands)."""
    deepest = 0
    stack = [(node, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node))
    return deepest


def parse_quietly(source: str | bytes) -> ast.Module | None:
    """The source's ``ast``, or None where CPython rejects it; its SyntaxWarnings are
    the linted file's, not ours to print."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
