"""The language server: diagnostics on open, change (debounced) and save; code actions;
hover with the rule's docs. Text documents and notebook documents (whose code cells are
linted as one module, each cell getting the findings in its lines; see
:mod:`~dtype_lint.frontends.server.notebooks`).

Lints run on one worker thread, off the event loop, so hovers and code actions are
answered while a large file is linted. They read the last finished lint of each
document, and only while the client still holds the version that was linted: a newer
text gets no hover and no actions until its own lint is done, never an older text's. A
lint of a version the client has already replaced is cancelled if it has not started,
and its result dropped if it has, so diagnostics never go back to an older version.
A document that cannot be linted gets no diagnostics and a line in the client's log; an
internal error costs that text its findings and is logged with its traceback, and the
server answers the next request as before.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import os
import sys
import traceback
from urllib.parse import unquote

from lsprotocol import types
from pygls import uris
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from dtype_lint import __version__
from dtype_lint.frontends.server.actions import FIX_ALL, code_actions
from dtype_lint.frontends.server.convert import (SOURCE, StepPlace, diagnostic, in_files, overlaps,
                                                 related_information, split_lines, to_engine)
from dtype_lint.core.finding import Finding
from dtype_lint.frontends.server.documents import Linter, Outcome
from dtype_lint.frontends.server.notebooks import NotebookView, in_cell, placed_in_cells, view

# Typing sends a change per keystroke, and a large file takes longer to lint than the gap
# between two: lint once the typing pauses.
DEBOUNCE_SECONDS = 0.15
# The lint thread holds the GIL for this long at most before the event loop may take it:
# Python's default (5 ms) would add up to a hover's several hand-overs of the GIL.
SWITCH_INTERVAL_SECONDS = 0.001


@dataclasses.dataclass(frozen=True)
class Linted:
    """A finished lint and the version of the document it is for (for a notebook, also
    the cells it was linted from)."""

    version: int | None
    outcome: Outcome
    notebook: NotebookView | None = None


@dataclasses.dataclass(frozen=True)
class Shown:
    """What hover and code actions work on in one document (a text document, or a cell
    of a notebook): its text, its findings in its lines and its version."""

    text: str
    findings: tuple[Finding, ...]
    version: int | None
    whole_file_fixes: bool = True  # False in a cell whose IPython lines the text stands in for


_NOTEBOOKS = types.NotebookDocumentSyncOptions(notebook_selector=[
    types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage("python")], notebook="*")])


class DtypeLintServer(LanguageServer):
    """pygls's server with the documents' last lints and the lints pending or running."""

    def __init__(self) -> None:
        super().__init__(SOURCE, __version__, notebook_document_sync=_NOTEBOOKS)
        self.linter = Linter()
        self.worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="dtype-lint")
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.linted: dict[str, Linted] = {}
        self.shown: set[str] = set()  # messages shown once, not at every keystroke
        self.logged: dict[str, Outcome] = {}  # per document, the outcome last logged

    def current(self, uri: str) -> Shown | None:
        """What the last finished lint found in the text the client holds (a document, or
        a notebook's cell), or None if that text has not been linted yet (or is not open)."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is not None:
            return self._current_cell(notebook, uri)
        linted = self.linted.get(uri)
        document = self.document(uri)
        if linted is None or document is None or linted.version != document.version:
            return None
        if linted.outcome.text != document.source:
            return None
        return Shown(linted.outcome.text, linted.outcome.findings, linted.version)

    def _current_cell(self, notebook: types.NotebookDocument, uri: str) -> Shown | None:
        linted = self.linted.get(notebook.uri)
        if linted is None or linted.notebook is None or linted.version != notebook.version:
            return None
        seen = linted.notebook  # the cells as linted: every change of a cell bumps the notebook's version
        cell = next((c for c in seen.cells if c.uri == uri), None)
        document = self.document(uri)
        if cell is None or document is None:
            return None
        return Shown(cell.text, tuple(in_cell(linted.outcome.findings, seen.module, cell)), document.version,
                     whole_file_fixes=cell.verbatim)

    def unchanged(self, uri: str, version: int | None, text: str) -> bool:
        """Whether the client still holds ``version`` (and ``text``) of the document or notebook."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            return notebook.version == version
        document = self.document(uri)
        return document is not None and document.version == version and document.source == text

    def snapshot(self, uri: str) -> tuple[int | None, str, str, NotebookView | None] | None:
        """``(version, path, text to lint, the notebook's view or None)`` of an open
        document or notebook, None once closed."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            seen = view(self.workspace, notebook)
            return notebook.version, uris.to_fs_path(uri) or uri, seen.module.text, seen
        document = self.document(uri)
        return None if document is None else (document.version, document.path, document.source, None)

    def document(self, uri: str) -> TextDocument | None:
        """The open document (pygls keeps them by unquoted URI), None once closed."""
        return self.workspace.text_documents.get(unquote(uri))

    def open_lines(self, uri: str) -> list[str] | None:
        """The lines of a document the client holds open, None for any other."""
        document = self.document(uri)
        return None if document is None else split_lines(document.source)

    def diagnostics(self, text: str, findings: list[Finding] | tuple[Finding, ...],
                    place: StepPlace) -> list[types.Diagnostic]:
        """The findings in ``text`` as diagnostics, each with the places of its flow."""
        codec = self.workspace.position_codec
        lines = split_lines(text)
        return [diagnostic(codec, lines, f, related_information(codec, f, place, self.open_lines)) for f in findings]

    def versioned_edits(self) -> bool:
        """Whether the client takes edits tied to a document version (it then refuses
        them once the document has changed since)."""
        edit = self.client_capabilities.workspace and self.client_capabilities.workspace.workspace_edit
        return bool(edit and edit.document_changes)

    def report(self, uri: str, outcome: Outcome) -> None:
        """Say in the client's log (once per outcome) why a text got no findings."""
        if self.logged.get(uri) is outcome:
            return
        self.logged[uri] = outcome
        if outcome.internal_error is not None:
            self.log(types.MessageType.Error, f"internal error on {uri}; please report it\n{outcome.internal_error}")
        elif outcome.problem is not None:
            self.log(types.MessageType.Log, f"{uri} not linted: {outcome.problem}")
        if outcome.config_problem is not None and outcome.config_problem not in self.shown:
            # An error, as the CLI, flake8 and mypy stop on it: no file it covers is linted.
            self.shown.add(outcome.config_problem)
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, outcome.config_problem))
        if outcome.warning is not None and outcome.warning not in self.shown:
            self.shown.add(outcome.warning)
            self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"{SOURCE}: {outcome.warning}"))

    def log(self, kind: types.MessageType, message: str) -> None:
        self.window_log_message(types.LogMessageParams(kind, f"{SOURCE}: {message}"))

    def schedule(self, uri: str, delay: float) -> None:
        """Lint ``uri`` after ``delay`` seconds, unless it changes again first; a lint of
        an older version still pending or running is cancelled."""
        self.cancel(uri)
        self.pending[uri] = asyncio.get_running_loop().create_task(self._lint(uri, delay))

    def saved(self, uri: str) -> None:
        """Lint a saved document now, and the open documents whose last lint read the
        saved file (a base class, a helper defined there), which see it anew."""
        self.schedule(uri, 0)
        path = uris.to_fs_path(uri)
        for other in self.linter.dependents(path) if path else ():
            if other != uri:
                self.schedule(other, 0)

    def close(self, uri: str, shown: list[str]) -> None:
        """Forget a closed document or notebook and clear the diagnostics of ``shown``
        (the document, or the notebook's cells)."""
        self.cancel(uri)
        self.worker.submit(self.linter.forget, uri)  # on the lint thread, after any lint of it
        self.linted.pop(uri, None)
        self.logged.pop(uri, None)
        for each in shown:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(each, []))

    def cancel(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()

    async def _lint(self, uri: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        snapshot = self.snapshot(uri)
        if snapshot is None:
            return
        version, path, text, notebook = snapshot
        try:
            # Cancelling this task while the lint runs cannot stop the thread; the check
            # below drops its result instead.
            outcome = await asyncio.get_running_loop().run_in_executor(self.worker, self.linter.lint, uri, path, text)
            if not self.unchanged(uri, version, text):
                return  # the client moved on: a newer lint is scheduled, or it closed
            self.linted[uri] = Linted(version, outcome, notebook)
            self.report(uri, outcome)
            # The engine ran in this process: a relative path in a flow is relative to its
            # working directory, as configuration discovery takes a relative path.
            folder = os.getcwd()
            if notebook is None:
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                    uri, self.diagnostics(outcome.text, outcome.findings, in_files(folder)), version=version))
                return
            place = placed_in_cells(notebook, path, folder)
            for cell in notebook.cells:  # every code cell, so that fixed cells are cleared
                document = self.document(cell.uri)
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                    cell.uri, self.diagnostics(cell.text, in_cell(outcome.findings, notebook.module, cell), place),
                    version=document.version if document is not None else None))
        except Exception:  # nobody awaits this task: say what went wrong where it is seen
            self.log(types.MessageType.Error, f"internal error on {uri}; please report it\n{traceback.format_exc()}")
        finally:
            if self.pending.get(uri) is asyncio.current_task():
                del self.pending[uri]


def create_server() -> DtypeLintServer:
    server = DtypeLintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DtypeLintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DtypeLintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: DtypeLintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.saved(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DtypeLintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri, [params.text_document.uri])

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(ls: DtypeLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(ls: DtypeLintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, DEBOUNCE_SECONDS)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(ls: DtypeLintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.saved(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: DtypeLintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.close(params.notebook_document.uri, [cell.uri for cell in params.cell_text_documents])

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]))
    def code_action(ls: DtypeLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        shown = ls.current(uri)
        if shown is None:
            return []  # edits computed for another text would corrupt this one
        lines = split_lines(shown.text)
        codec = ls.workspace.position_codec
        start, end = to_engine(codec, lines, params.range.start), to_engine(codec, lines, params.range.end)
        in_range = [f for f in shown.findings if overlaps(f, start, end)]
        version = shown.version if ls.versioned_edits() else None
        actions = code_actions(uri, version, shown.text, shown.findings, in_range, codec, params.context.only)
        # Fixing a whole cell rewrites its text, which holds stand-ins for IPython lines.
        return actions if shown.whole_file_fixes else [a for a in actions if a.kind != FIX_ALL]

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: DtypeLintServer, params: types.HoverParams) -> types.Hover | None:
        shown = ls.current(params.text_document.uri)
        if shown is None:
            return None
        lines = split_lines(shown.text)
        at = to_engine(ls.workspace.position_codec, lines, params.position)
        codes = sorted({f.code for f in shown.findings if overlaps(f, at, at)})
        if not codes:
            return None
        from dtype_lint.rules.registry import all_docs  # loaded already: there are findings

        docs = all_docs()
        text = "\n\n---\n\n".join(docs[code].markdown() for code in codes)
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text))

    return server


def serve() -> int:
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    create_server().start_io()
    return 0
