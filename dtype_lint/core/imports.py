"""The text edit that adds the imports a fix needs, placed and merged by LibCST's
codemod helper (after the docstring and `__future__` imports, into an existing
`from typing import ...` where there is one; nothing where the name is imported).

The helper only reads and changes the module's head, the statements up to the first
that is neither the docstring nor an import: it runs on that head alone, so that a fix
in a long file costs a parse of its imports, not of the whole file again (on a
1,600-line file, 1.1 s against a few milliseconds). As on the whole module, only the
head's imports count as already there.
"""

from __future__ import annotations

import ast
import functools
import os
from typing import Sequence

from dtype_lint.core.finding import Edit
from dtype_lint.core.lines import line_starts, place

_NEXT_STATEMENT = "pass\n"


def import_edit(text: str, imports: Sequence[tuple[str, str | None]], tree: ast.Module | None = None) -> Edit | None:
    """One edit that adds ``imports`` (``(module, name)``, or ``(module, None)`` for
    ``import module``) to ``text`` (whose ``ast`` is ``tree`` where the caller has it),
    or None where all of them are there."""
    if tree is None:
        try:  # top-level await parses: a notebook's cells are such a module
            tree = compile(text, "<module>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        except (SyntaxError, ValueError):  # syntax LibCST reads and this Python does not
            tree = None
    # The helper sees the head and the blank and comment lines after it, then a stand-in
    # for the first statement that follows: it spaces the added imports from that one.
    shown = _head(text, tree.body) if tree is not None and tree.body else text
    new = _with_imports(shown, tuple(imports))
    if new == shown:
        return None
    start = len(os.path.commonprefix([shown, new]))
    # the unchanged tail, not reaching back into the unchanged start of either text
    tail = len(os.path.commonprefix([shown[start:][::-1], new[start:][::-1]]))
    (line, column), (end_line, end_column) = place(text, start), place(text, len(shown) - tail)
    return Edit(line, column, end_line, end_column, new[start:len(new) - tail])


@functools.lru_cache(maxsize=32)
def _with_imports(text: str, imports: tuple[tuple[str, str | None], ...]) -> str:
    """``text`` after LibCST's helper added ``imports``. Remembered: the helper's visitors
    cost about 15 ms each to build, and the language server lints the same head again at
    every edit of the body."""
    import libcst as cst
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor, ImportItem

    items = [ImportItem(module, name) for module, name in imports]
    return AddImportsVisitor(CodemodContext(), items).transform_module(cst.parse_module(text)).code


def _head(text: str, body: list[ast.stmt]) -> str:
    """The module's docstring and leading imports, up to the first other statement,
    which is replaced by a stand-in (its leading blank and comment lines kept)."""
    for index, statement in enumerate(body):
        docstring = (index == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                     and isinstance(statement.value.value, str))
        if not (docstring or isinstance(statement, (ast.Import, ast.ImportFrom))):
            first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
            return text[:line_starts(text)[first - 1]] + _NEXT_STATEMENT
    return text  # only imports: the whole text is its head
