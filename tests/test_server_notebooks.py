"""The language server on notebook documents (LSP 3.17 `notebookDocument/*`), driven by
a real client (pytest-lsp) over stdio: per-cell diagnostics, hover and code actions."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from test_server import TIMEOUT, _apply, client  # noqa: F401 (client is the fixture)

pytestmark = pytest.mark.asyncio

CELLS = [
    (types.NotebookCellKind.Markup, "# Training"),
    (types.NotebookCellKind.Code, "%matplotlib inline\nimport torch\nfrom torch.utils.data import DataLoader\n!nvidia-smi"),
    (types.NotebookCellKind.Code, "collate = lambda batch: batch"),
    (types.NotebookCellKind.Code, "loader = DataLoader(ds, num_workers=2, collate_fn=collate)"),
    (types.NotebookCellKind.Code, "%time x = 1\ndef scale(x, dtype=torch.float32):\n    return x.to(dtype)"),
    (types.NotebookCellKind.Code, "model = torch.nn.Linear(2, 2)\nmodel.half()\nopt = torch.optim.SGD(model.parameters())"),
]


def _cell_uri(tmp_path, number: int) -> str:
    return f"vscode-notebook-cell:{(tmp_path / 'train.ipynb').as_posix()}#cell{number}"


async def _published(client: LanguageClient, uris: set[str], send) -> dict[str, list[types.Diagnostic]]:
    """Send a notification and wait until each of ``uris`` has had its diagnostics
    published again (pytest-lsp's client keeps the last ones of each document)."""
    for uri in uris:
        client.diagnostics.pop(uri, None)
    send()
    for _ in range(int(TIMEOUT / 0.05)):
        if uris <= set(client.diagnostics):
            return {uri: client.diagnostics[uri] for uri in uris}
        await asyncio.sleep(0.05)
    raise AssertionError(f"no diagnostics for {uris - set(client.diagnostics)}; server log: {client.log_messages}")


async def _open_notebook(client: LanguageClient, tmp_path) -> tuple[str, dict[str, list[types.Diagnostic]]]:
    uri = (tmp_path / "train.ipynb").as_uri()
    cells = [types.NotebookCell(kind=kind, document=_cell_uri(tmp_path, n)) for n, (kind, _) in enumerate(CELLS, 1)]
    documents = [types.TextDocumentItem(uri=_cell_uri(tmp_path, n), language_id="python" if kind == 2 else "markdown",
                                        version=1, text=text) for n, (kind, text) in enumerate(CELLS, 1)]
    params = types.DidOpenNotebookDocumentParams(
        types.NotebookDocument(uri=uri, notebook_type="jupyter-notebook", version=1, cells=cells), documents)
    code = {_cell_uri(tmp_path, n) for n, (kind, _) in enumerate(CELLS, 1) if kind == types.NotebookCellKind.Code}
    return uri, await _published(client, code, lambda: client.notebook_document_did_open(params))


def _spans(diagnostics: list[types.Diagnostic]) -> set[tuple[str, int, int]]:
    return {(d.code, d.range.start.line, d.range.start.character) for d in diagnostics}


async def test_each_cell_gets_the_findings_in_its_lines_as_the_cli_reports_them(client: LanguageClient, tmp_path):
    _, published = await _open_notebook(client, tmp_path)
    # The lambda bound in cell 3 reaches DataLoader(num_workers=2) in cell 4; magics move nothing.
    assert _spans(published[_cell_uri(tmp_path, 4)]) == {("DTL202", 0, 50)}
    assert _spans(published[_cell_uri(tmp_path, 5)]) == {("DTL101", 1, 19)}
    assert _spans(published[_cell_uri(tmp_path, 6)]) == {("DTL303", 1, 0)}  # a hazard of each family
    assert not published[_cell_uri(tmp_path, 2)] and not published[_cell_uri(tmp_path, 3)]
    assert published[_cell_uri(tmp_path, 5)][0].code_description.href.endswith("/dtl101-float32-dtype-default/")


async def test_hover_and_code_actions_work_in_a_cell_and_an_edit_relints_the_notebook(client: LanguageClient, tmp_path):
    uri, _ = await _open_notebook(client, tmp_path)
    cell5 = _cell_uri(tmp_path, 5)
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(cell5), types.Position(1, 22)))
    assert hover is not None and "float32-dtype-default (DTL101)" in hover.contents.value
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(cell5), types.Range(types.Position(1, 19), types.Position(1, 19)),
        types.CodeActionContext(diagnostics=[])))
    noqa = next(a for a in actions if "noqa" in a.title)
    (change,) = noqa.edit.document_changes
    assert change.text_document.uri == cell5
    fixed = _apply(CELLS[4][1], change.edits)
    assert fixed.splitlines()[0] == "%time x = 1"  # the magic line is kept as it is
    assert fixed.splitlines()[1].endswith("  # noqa: DTL101")
    # The editor applies it: the notebook is linted again, and cell 5 is clean.
    params = types.DidChangeNotebookDocumentParams(
        types.VersionedNotebookDocumentIdentifier(version=2, uri=uri),
        types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(version=2, uri=cell5),
                changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)])])))
    published = await _published(client, {cell5}, lambda: client.notebook_document_did_change(params))
    assert not published[cell5]


async def test_closing_a_notebook_clears_its_cells(client: LanguageClient, tmp_path):
    uri, _ = await _open_notebook(client, tmp_path)
    cell4 = _cell_uri(tmp_path, 4)
    params = types.DidCloseNotebookDocumentParams(
        types.NotebookDocumentIdentifier(uri), [types.TextDocumentIdentifier(_cell_uri(tmp_path, n))
                                                for n in range(1, len(CELLS) + 1)])
    published = await _published(client, {cell4}, lambda: client.notebook_document_did_close(params))
    assert not published[cell4]
