"""Findings as LSP diagnostics, and engine positions (1-based lines, 1-based columns in
characters) as LSP positions and back. A finding's flow (the places, maybe in other
files, that make it one) becomes the diagnostic's related information.

LSP counts 0-based lines and columns in the code units the client negotiated (UTF-16
unless it offers another); pygls's position codec does that counting. Lines are split
where the engine splits them (``\\n``, ``\\r\\n``, ``\\r``), which is also where LSP
splits them, unlike ``str.splitlines``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable, Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from dtype_lint.core.engine import NEWLINE
from dtype_lint.core.finding import Edit, Finding, Step
from dtype_lint.frontends.severity import LSP_SEVERITY, level


def split_lines(text: str) -> list[str]:
    return NEWLINE.split(text)


def to_range(codec: PositionCodec, lines: Sequence[str], line: int, column: int,
             end_line: int, end_column: int) -> types.Range:
    start = ServerTextPosition(line - 1, column - 1)
    end = ServerTextPosition(end_line - 1, end_column - 1)
    return types.Range(codec.position_to_client_units(lines, start), codec.position_to_client_units(lines, end))


def finding_range(codec: PositionCodec, lines: Sequence[str], finding: Finding) -> types.Range:
    return to_range(codec, lines, finding.line, finding.column, finding.end_line, finding.end_column)


def text_edit(codec: PositionCodec, lines: Sequence[str], edit: Edit) -> types.TextEdit:
    return types.TextEdit(to_range(codec, lines, edit.line, edit.column, edit.end_line, edit.end_column), edit.content)


SOURCE = "dtype-lint"


def diagnostic(codec: PositionCodec, lines: Sequence[str], finding: Finding,
               related: Sequence[types.DiagnosticRelatedInformation] = ()) -> types.Diagnostic:
    """The finding as a diagnostic: its severity is the one SARIF and GitHub get, its
    code links to the rule's docs, and ``related`` (:func:`related_information`) are the
    places of its flow."""
    return types.Diagnostic(
        range=finding_range(codec, lines, finding),
        message=finding.message,
        severity=types.DiagnosticSeverity(LSP_SEVERITY[level(finding)]),
        code=finding.code,
        code_description=types.CodeDescription(href=_help_uri(finding.code)),
        source=SOURCE,
        related_information=list(related) or None,
    )


# A step's document (its URI) and its line there: in a notebook, a step in the notebook's
# own cells is in one of them (:func:`~dtype_lint.frontends.server.notebooks.placed_in_cells`).
StepPlace = Callable[[Step], tuple[str, int]]


def in_files(folder: str) -> StepPlace:
    """A step in the file it names: a relative path is relative to ``folder``, the
    working directory the engine ran in; an absolute one (an installed package's file)
    is kept."""
    return lambda step: (Path(folder, step.path).as_uri(), step.line)


def related_information(codec: PositionCodec, finding: Finding, place: StepPlace,
                        lines_of: Callable[[str], Sequence[str] | None]) -> list[types.DiagnosticRelatedInformation]:
    """Each step of the finding's flow, in order, as an empty range where it starts and
    its message. ``lines_of(uri)`` is the document's text where the client holds it open
    (columns then count the client's code units), else None: a file on disk is not read
    for this, and its columns are the engine's characters (the same but after a
    character outside the BMP)."""
    out = []
    for step in finding.flow:
        uri, line = place(step)
        at = _position(codec, lines_of(uri), line, step.column)
        out.append(types.DiagnosticRelatedInformation(types.Location(uri, types.Range(at, at)), step.message))
    return out


def _position(codec: PositionCodec, lines: Sequence[str] | None, line: int, column: int) -> types.Position:
    if lines is not None and 0 < line <= len(lines):
        return codec.position_to_client_units(lines, ServerTextPosition(line - 1, column - 1))
    return types.Position(max(line - 1, 0), max(column - 1, 0))


@functools.lru_cache(maxsize=None)
def _help_uri(code: str) -> str:
    from dtype_lint.rules.registry import all_docs  # loaded already: there is a finding

    return all_docs()[code].help_uri


def to_engine(codec: PositionCodec, lines: Sequence[str], position: types.Position) -> tuple[int, int]:
    """A client position as the engine's (line, column)."""
    if not lines or position.line >= len(lines):
        return len(lines) + 1, 1
    server = codec.position_from_client_units(lines, types.Position(position.line, position.character))
    return server.line + 1, server.character + 1


def overlaps(finding: Finding, start: tuple[int, int], end: tuple[int, int]) -> bool:
    """Whether the finding's span touches the (inclusive) span from ``start`` to ``end``."""
    return (finding.line, finding.column) <= end and start <= (finding.end_line, finding.end_column)
