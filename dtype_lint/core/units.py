"""A file cut into units, on CPython's ``ast``: top-level statements (several sharing a
line are one), and the members of a top-level class, each a run of whole lines kept or
dropped as one; and what a unit binds where :class:`~dtype_lint.core.context.FileContext`
looks names up. The prefilter keeps units; the incremental linter relints them."""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Iterator

from dtype_lint.core import shapes


@dataclasses.dataclass(frozen=True)
class Unit:
    """A run of whole lines (1-based, inclusive) that is kept or dropped as one."""

    start: int
    end: int
    node: ast.AST | None  # None for several simple statements sharing lines
    nodes: tuple[ast.AST, ...]
    is_function: bool


def outside_functions(nodes: tuple[ast.AST, ...]) -> Iterator[ast.AST]:
    """Statements (and class definitions) not inside a function, at any depth."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.expr)):
            stack.extend(_children(node))


def _children(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, in its order, without its generators."""
    children: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            children.append(value)
        elif isinstance(value, list):
            children.extend(item for item in value if isinstance(item, ast.AST))
    return children


def named(text: str, pattern: re.Pattern[str]) -> set[str]:
    """The names ``pattern`` (a keyword, then the name) finds where the keyword starts a
    word, as ``\\b`` + ``pattern`` would: after a match inside a word (`dataclass`) the
    search goes on from its next character."""
    names: set[str] = set()
    match = pattern.search(text)
    while match is not None:
        if shapes.in_word(text, match.start() - 1):
            match = pattern.search(text, match.start() + 1)
        else:
            names.add(match.group(1))
            match = pattern.search(text, match.end())
    return names


def body_on_own_lines(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    """Whether the body starts on a line of its own, so the header is whole lines."""
    first = node.body[0]
    start = header_start(first)
    if start <= node.lineno:
        return False
    return not lines[start - 1].encode("utf-8")[: first.col_offset if start == first.lineno else 0].strip()


def header_start(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno] + [d.lineno for d in decorators])


def units(body: list[ast.stmt]) -> list[Unit]:
    """Statements as units of whole lines; statements sharing a line are one unit."""
    units: list[Unit] = []
    for stmt in body:
        start, end = header_start(stmt), stmt.end_lineno or stmt.lineno
        is_function = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
        if units and start <= units[-1].end:
            last = units[-1]
            units[-1] = Unit(last.start, max(end, last.end), None, last.nodes + (stmt,),
                             last.is_function or is_function)
        else:
            units.append(Unit(start, end, stmt, (stmt,), is_function))
    return units


def docstring(node: ast.AST, lines: list[str]) -> bool:
    """Whether the body opens with a docstring on lines of its own (nothing else of the
    code shares them, so leaving them out of the text to match loses nothing)."""
    body = getattr(node, "body", None)
    if not (body and len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return False
    doc = body[0]
    alone = not lines[doc.lineno - 1].encode("utf-8")[: doc.col_offset].strip()
    return alone and body[1].lineno > (doc.end_lineno or doc.lineno)


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def binds(unit: Unit) -> set[str]:
    """Names the unit binds where FileContext keeps them for the rest of the file: every
    function and class name at any depth, and imports and assignments outside functions."""
    names: set[str] = set()
    for node in outside_functions(unit.nodes):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.update(n.name for n in shapes.walk(node) if isinstance(n, _DEFINITIONS))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.withitem)):
            targets = node.targets if isinstance(node, ast.Assign) else [
                node.optional_vars if isinstance(node, ast.withitem) else node.target]
            names.update(n.id for t in targets if t is not None for n in shapes.walk(t) if isinstance(n, ast.Name))
    return names
