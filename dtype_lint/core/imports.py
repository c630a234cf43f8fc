"""The text edit that adds the imports a fix needs, placed and merged by LibCST's
codemod helper (after the docstring and `__future__` imports, into an existing
`from typing import ...` where there is one; nothing where the name is imported)."""

from __future__ import annotations

import os
from typing import Sequence

from dtype_lint.core.finding import Edit
from dtype_lint.core.lines import place


def import_edit(text: str, imports: Sequence[tuple[str, str | None]]) -> Edit | None:
    """One edit that adds ``imports`` (``(module, name)``, or ``(module, None)`` for
    ``import module``) to ``text``, or None where all of them are there."""
    import libcst as cst
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor, ImportItem

    items = [ImportItem(module, name) for module, name in imports]
    new = AddImportsVisitor(CodemodContext(), items).transform_module(cst.parse_module(text)).code
    if new == text:
        return None
    start = len(os.path.commonprefix([text, new]))
    # the unchanged tail, not reaching back into the unchanged head of either text
    tail = len(os.path.commonprefix([text[start:][::-1], new[start:][::-1]]))
    (line, column), (end_line, end_column) = place(text, start), place(text, len(text) - tail)
    return Edit(line, column, end_line, end_column, new[start:len(new) - tail])
