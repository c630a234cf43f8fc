"""Notebook documents (LSP 3.17 ``notebookDocument/*``): the code cells, as the editor
holds them, linted as one module, as the CLI lints a ``.ipynb`` file; each cell gets
the findings in its own lines.

A cell's part of the module has its IPython lines (magics, shell escapes) replaced by
stand-ins of the same indentation (:mod:`dtype_lint.project.notebooks`), so every other
line and column is the cell's own: a finding, a fix and a ``# noqa`` edit moved into the
cell's lines apply to the cell's text as it is.
"""

from __future__ import annotations

import dataclasses
import os
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import Workspace

from dtype_lint.core.finding import Finding, Fix, Step
from dtype_lint.frontends.server.convert import StepPlace, in_files
from dtype_lint.project.notebooks import CELL_SEPARATOR, CellModule, cells_as_module


@dataclasses.dataclass(frozen=True)
class Cell:
    """One code cell: its URI, its number in the notebook, its part of the module and
    whether that part is the cell's text as it is (no IPython line was replaced)."""

    uri: str
    number: int
    text: str
    verbatim: bool


@dataclasses.dataclass(frozen=True)
class NotebookView:
    """The notebook's code cells and the module they are linted as."""

    module: CellModule
    cells: tuple[Cell, ...]


def view(workspace: Workspace, notebook: types.NotebookDocument) -> NotebookView:
    numbered, uris, texts = [], [], []
    for number, cell in enumerate(notebook.cells, start=1):  # markdown cells count, as in the CLI
        if cell.kind != types.NotebookCellKind.Code:
            continue
        document = workspace.text_documents.get(unquote(cell.document))
        text = document.source if document is not None else ""
        numbered.append((number, text))
        uris.append(cell.document)
        texts.append(text)
    module = cells_as_module(numbered)
    parts = module.text.split(f"\n{CELL_SEPARATOR}\n")
    cells = tuple(Cell(uri, number, part, part == text)
                  for uri, (number, _), part, text in zip(uris, numbered, parts, texts))
    return NotebookView(module, cells)


def in_cell(findings: tuple[Finding, ...], module: CellModule, cell: Cell) -> list[Finding]:
    """The findings in ``cell``, in the cell's own lines; a fix that also edits another
    cell (an import added at the top) is left out: one cell's edit cannot hold it."""
    index = module.cells.cells.index(cell.number)
    first = module.cells.starts[index]
    last = first + cell.text.count("\n")
    shift = first - 1
    out = []
    for finding in findings:
        if not first <= finding.line <= last:
            continue
        fix = finding.fix
        if fix is not None:
            inside = all(first <= e.line and e.end_line <= last for e in fix.edits)
            fix = Fix(fix.applicability, tuple(dataclasses.replace(e, line=e.line - shift, end_line=e.end_line - shift)
                                               for e in fix.edits)) if inside else None
        out.append(dataclasses.replace(finding, line=finding.line - shift, end_line=finding.end_line - shift,
                                       fix=fix, cells=None))
    return out


def placed_in_cells(seen: NotebookView, path: str, folder: str) -> StepPlace:
    """Where the steps of a flow are, for a finding of the notebook at ``path``: a step in
    the notebook itself (a line of the module) in its cell's document, in the cell's own
    lines; any other in the file it names (relative to ``folder``)."""
    in_file = in_files(folder)
    cell_uris = {cell.number: cell.uri for cell in seen.cells}
    own = os.path.normpath(path)

    def place(step: Step) -> tuple[str, int]:
        if os.path.normpath(os.path.join(folder, step.path)) != own:
            return in_file(step)
        number, line = seen.module.cells.locate(step.line)
        return cell_uris[number], line

    return place
