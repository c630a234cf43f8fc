"""Code actions on a document's findings: apply one fix, apply every safe fix in the file,
add `# noqa: CODE` for a finding's line.

One fix replaces the node it was reported for with code LibCST generated, so it is sent
as is. Fixing the whole file goes through :func:`~dtype_lint.core.fixes.fixed_text`, as
the CLI does: the result must parse, or the action is not offered. It is sent as one
edit of the span that changes, so the client keeps its cursor and folds elsewhere. The
`# noqa` comment is written by :func:`~dtype_lint.core.noqa.noqa_edits`, as
`--add-noqa` writes it.
"""

from __future__ import annotations

import functools
import os
from typing import Callable, Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from dtype_lint.core.engine import NEWLINE, LintError
from dtype_lint.core.finding import Edit, Finding
from dtype_lint.core.fixes import applicable, fixed_text
from dtype_lint.core.noqa import noqa_edits
from dtype_lint.frontends.server.convert import SOURCE, diagnostic, split_lines, text_edit

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"


def code_actions(uri: str, version: int | None, text: str, findings: Sequence[Finding],
                 in_range: Sequence[Finding], codec: PositionCodec, only: Sequence[str] | None) -> list[types.CodeAction]:
    """The actions for the findings ``in_range`` (those at the cursor or selection), and
    fixing the whole file when it has safe fixes; ``only`` restricts the kinds. The edits
    are for ``version`` of the document where given (the client then refuses them for
    any other), else for whatever text the client holds."""
    lines = split_lines(text)
    edit = functools.partial(_workspace_edit, uri, version)
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        for finding in in_range:
            if finding.fix is not None:
                actions.append(_fix_one(edit, lines, codec, finding))
        for finding in in_range:
            noqa = _noqa(edit, text, lines, codec, finding)
            if noqa is not None:
                actions.append(noqa)
    safe = tuple(applicable(list(findings), unsafe=False))
    if safe and _wanted(FIX_ALL, only):
        whole = _fix_all(text, safe)
        if whole is not None:
            actions.append(types.CodeAction(
                title=f"{SOURCE}: fix all safe fixes in the file",
                kind=FIX_ALL,
                edit=edit([text_edit(codec, lines, whole)]),
            ))
    return actions


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    return not only or any(kind == o or kind.startswith(f"{o}.") for o in only)


def _workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    if version is None:
        return types.WorkspaceEdit(changes={uri: edits})
    document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(document, edits)])


def _fix_one(edit: Callable[[list[types.TextEdit]], types.WorkspaceEdit], lines: Sequence[str], codec: PositionCodec, finding: Finding) -> types.CodeAction:
    assert finding.fix is not None
    safe = finding.fix.applicability == "safe"
    title = f"Fix {finding.code} ({finding.name})" + ("" if safe else " [unsafe: may change behaviour]")
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic(codec, lines, finding)],
        is_preferred=safe,
        edit=edit([text_edit(codec, lines, e) for e in finding.fix.edits]),
    )


def _noqa(edit: Callable[[list[types.TextEdit]], types.WorkspaceEdit], text: str, lines: Sequence[str], codec: PositionCodec,
          finding: Finding) -> types.CodeAction | None:
    edits = noqa_edits(text, [finding])
    if not edits:
        return None
    return types.CodeAction(
        title=f"Add `# noqa: {finding.code}` for this line",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic(codec, lines, finding)],
        edit=edit([text_edit(codec, lines, e) for e in edits]),
    )


@functools.lru_cache(maxsize=8)  # editors ask for actions at every cursor move: parse once per text
def _fix_all(text: str, safe: tuple[Finding, ...]) -> Edit | None:
    """One edit from the first changed character to the last, or None if the result
    would not parse."""
    try:
        new = fixed_text(text, list(safe))
    except LintError:
        return None
    start = len(os.path.commonprefix([text, new]))
    if 0 < start < len(text) and text[start - 1] == "\r" and text[start] == "\n":
        start -= 1  # never split a \r\n line end
    end = 0
    while end < min(len(text), len(new)) - start and text[-1 - end] == new[-1 - end]:
        end += 1
    if 0 < end < len(text) and text[len(text) - end] == "\n" and text[len(text) - end - 1] == "\r":
        end -= 1
    line, column = _position(text, start)
    end_line, end_column = _position(text, len(text) - end)
    return Edit(line, column, end_line, end_column, new[start:len(new) - end])


def _position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based (line, column) of a character offset, splitting lines as the engine does."""
    before = NEWLINE.split(text[:offset])
    return len(before), len(before[-1]) + 1
