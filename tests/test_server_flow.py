"""The language server's related information: each step of a finding's flow as a
location (a file URI, a 0-based empty range) with its message, converted by the
functions the server publishes diagnostics with, on findings built here (the engine's
flows are tested end to end where it fills them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from dtype_lint.core.finding import Finding, Step
from dtype_lint.frontends.server.convert import diagnostic, in_files, related_information, split_lines
from dtype_lint.frontends.server.notebooks import Cell, NotebookView, in_cell, placed_in_cells
from dtype_lint.project.notebooks import cells_as_module

CODEC = PositionCodec(types.PositionEncodingKind.Utf16)
TEXT = "import torch\nscorer = Scorer()\n"


def finding(path: str, line: int, flow: tuple[Step, ...]) -> Finding:
    return Finding(path, line, 10, line, 18, "DTL204", "unpicklable-callable-on-module", "hazard", flow=flow)


def related(found: Finding, place, lines_of=lambda uri: None) -> list[tuple[str, tuple[int, int, int, int], str]]:
    return [(r.location.uri, (r.location.range.start.line, r.location.range.start.character,
                              r.location.range.end.line, r.location.range.end.character), r.message)
            for r in related_information(CODEC, found, place, lines_of)]


def test_each_step_in_order_relative_paths_from_the_lints_folder(tmp_path: Path):
    installed = tmp_path / "site-packages" / "timm" / "layers.py"
    found = finding(str(tmp_path / "train.py"), 2, (
        Step("nets/heads.py", 31, 9, "lambda stored by Scorer.__init__"),
        Step(str(installed), 7, 1, "Scorer derives from torch.nn.Module"),
    ))
    assert related(found, in_files(str(tmp_path))) == [
        ((tmp_path / "nets" / "heads.py").as_uri(), (30, 8, 30, 8), "lambda stored by Scorer.__init__"),
        (installed.as_uri(), (6, 0, 6, 0), "Scorer derives from torch.nn.Module"),
    ]


def test_the_diagnostic_carries_them_and_a_finding_without_flow_none(tmp_path: Path):
    step = Step("nets/heads.py", 31, 9, "lambda stored by Scorer.__init__")
    with_flow = finding("train.py", 2, (step,))
    lines = split_lines(TEXT)
    published = diagnostic(CODEC, lines, with_flow, related_information(CODEC, with_flow, in_files(str(tmp_path)),
                                                                         lambda uri: None))
    (information,) = published.related_information
    assert (information.message, information.location.range.start) == (step.message, types.Position(30, 8))
    without = dataclasses.replace(with_flow, flow=())
    assert diagnostic(CODEC, lines, without, related_information(CODEC, without, in_files(str(tmp_path)),
                                                                 lambda uri: None)).related_information is None


def test_columns_count_utf16_units_in_a_document_the_client_holds(tmp_path: Path):
    found = finding("train.py", 2, (Step("nets/heads.py", 1, 8, "lambda stored here"),))
    uri = (tmp_path / "nets" / "heads.py").as_uri()
    open_text = {uri: split_lines('s = "\U0001F600"; f = lambda: 0\n')}
    # The emoji before the step is one character but two UTF-16 units.
    assert related(found, in_files(str(tmp_path)), open_text.get)[0][1] == (0, 8, 0, 8)
    assert related(found, in_files(str(tmp_path)))[0][1] == (0, 7, 0, 7)


def test_a_step_in_the_notebooks_own_cells_is_in_its_cells_document(tmp_path: Path):
    sources = [(1, "import torch\nfrom nets import Scorer"), (3, "scorer = Scorer()\nscorer.run()")]
    module = cells_as_module(sources)
    cells = tuple(Cell(f"vscode-notebook-cell:/exp.ipynb#c{number}", number, text, True) for number, text in sources)
    seen = NotebookView(module, cells)
    path = str(tmp_path / "exp.ipynb")
    scorer_line = module.cells.starts[1]  # module line of `scorer = Scorer()`
    found = finding(path, scorer_line + 1, (Step(path, 2, 1, "Scorer imported here"),
                                            Step("exp.ipynb", scorer_line, 10, "Scorer() makes it"),
                                            Step("nets/heads.py", 31, 9, "lambda stored by Scorer.__init__")))
    (in_third,) = in_cell((found,), module, cells[1])
    assert in_third.line == 2  # the finding in its cell's lines; its flow as the engine gave it
    assert related(in_third, placed_in_cells(seen, path, str(tmp_path))) == [
        (cells[0].uri, (1, 0, 1, 0), "Scorer imported here"),
        (cells[1].uri, (0, 9, 0, 9), "Scorer() makes it"),
        ((tmp_path / "nets" / "heads.py").as_uri(), (30, 8, 30, 8), "lambda stored by Scorer.__init__"),
    ]
