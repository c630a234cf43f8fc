"""The language server: diagnostics on open, change (debounced) and save; code actions;
hover with the rule's docs.

Everything runs on the server's one event loop, one request or lint at a time, so the
results a code action or hover sees are those of the text the client holds. A document
that cannot be linted gets no diagnostics and a line in the client's log; an internal
error costs that text its findings and is logged with its traceback, and the server
answers the next request as before.
"""

from __future__ import annotations

import asyncio
import traceback

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from dtype_lint import __version__
from dtype_lint.frontends.server.actions import FIX_ALL, code_actions
from dtype_lint.frontends.server.convert import SOURCE, diagnostic, overlaps, split_lines, to_engine
from dtype_lint.frontends.server.documents import Linter, Outcome

# Typing sends a change per keystroke, and a large file takes longer to lint than the gap
# between two: lint once the typing pauses.
DEBOUNCE_SECONDS = 0.15


class DtypeLintServer(LanguageServer):
    """pygls's server with the documents' lint results and the pending debounced lints."""

    def __init__(self) -> None:
        super().__init__(SOURCE, __version__)
        self.linter = Linter()
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.shown: set[str] = set()  # messages shown once, not at every keystroke
        self.logged: dict[str, Outcome] = {}  # per document, the outcome last logged

    def outcome(self, uri: str) -> Outcome:
        document = self.workspace.get_text_document(uri)
        outcome = self.linter.lint(uri, document.path, document.source)
        if self.logged.get(uri) is outcome:
            return outcome
        self.logged[uri] = outcome
        if outcome.internal_error is not None:
            self.log(types.MessageType.Error, f"internal error on {uri}; please report it\n{outcome.internal_error}")
        elif outcome.problem is not None:
            self.log(types.MessageType.Log, f"{uri} not linted: {outcome.problem}")
        if outcome.config_problem is not None and outcome.config_problem not in self.shown:
            self.shown.add(outcome.config_problem)
            self.window_show_message(types.ShowMessageParams(types.MessageType.Warning,
                                                             f"{SOURCE}: {outcome.config_problem}"))
        return outcome

    def log(self, kind: types.MessageType, message: str) -> None:
        self.window_log_message(types.LogMessageParams(kind, f"{SOURCE}: {message}"))

    def publish(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        outcome = self.outcome(uri)
        lines = split_lines(outcome.text)
        codec = self.workspace.position_codec
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri, [diagnostic(codec, lines, f) for f in outcome.findings], version=document.version))

    def schedule(self, uri: str, delay: float) -> None:
        """Lint ``uri`` after ``delay`` seconds, unless it changes again first."""
        self.cancel(uri)
        self.pending[uri] = asyncio.get_running_loop().create_task(self._later(uri, delay))

    def cancel(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()

    async def _later(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        del self.pending[uri]
        try:
            self.publish(uri)
        except Exception:  # nobody awaits this task: say what went wrong where it is seen
            self.log(types.MessageType.Error, f"internal error on {uri}; please report it\n{traceback.format_exc()}")


def create_server() -> DtypeLintServer:
    server = DtypeLintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DtypeLintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.cancel(params.text_document.uri)
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: DtypeLintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: DtypeLintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.cancel(params.text_document.uri)
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DtypeLintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.cancel(uri)
        ls.linter.forget(uri)
        ls.logged.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]))
    def code_action(ls: DtypeLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        outcome = ls.outcome(uri)
        lines = split_lines(outcome.text)
        codec = ls.workspace.position_codec
        start, end = to_engine(codec, lines, params.range.start), to_engine(codec, lines, params.range.end)
        in_range = [f for f in outcome.findings if overlaps(f, start, end)]
        return code_actions(uri, outcome.text, outcome.findings, in_range, codec, params.context.only)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: DtypeLintServer, params: types.HoverParams) -> types.Hover | None:
        outcome = ls.outcome(params.text_document.uri)
        lines = split_lines(outcome.text)
        at = to_engine(ls.workspace.position_codec, lines, params.position)
        codes = sorted({f.code for f in outcome.findings if overlaps(f, at, at)})
        if not codes:
            return None
        from dtype_lint.rules.registry import all_docs  # loaded already: there are findings

        docs = all_docs()
        text = "\n\n---\n\n".join(docs[code].markdown() for code in codes)
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text))

    return server


def serve() -> int:
    create_server().start_io()
    return 0
