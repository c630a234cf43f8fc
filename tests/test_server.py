"""`dtype-lint server` end to end: a real LSP client (pytest-lsp) drives the server as a
subprocess over stdio: diagnostics, code actions, hover, edits, and bad input."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import FIXTURES, fixture_files, run_process

pytestmark = pytest.mark.asyncio

HAZARDS = (
    "import jax\n"
    "import torch\n"
    "\n"
    "\n"
    "def f(x, dtype=torch.float32):\n"
    "    return jax.tree_map(lambda p: p * 2, x)\n"
)
CLEAN = "import jax\n\n\ndef f(x):\n    return jax.tree.map(lambda p: p * 2, x)\n"
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
TIMEOUT = 60


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "dtype_lint", "server"]))
async def client(lsp_client: LanguageClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\nextend-select = ["DTL304"]\n')
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def _diagnostics(client: LanguageClient, send) -> types.PublishDiagnosticsParams:
    """Send a notification and wait for the diagnostics it leads to."""
    waiter = client.protocol.wait_for_notification_async(PUBLISH)
    send()
    return await asyncio.wait_for(waiter, TIMEOUT)


async def _open(client: LanguageClient, path, text: str) -> types.PublishDiagnosticsParams:
    item = types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=text)
    return await _diagnostics(client, lambda: client.text_document_did_open(types.DidOpenTextDocumentParams(item)))


async def _change(client: LanguageClient, path, text: str, version: int) -> types.PublishDiagnosticsParams:
    params = types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version=version, uri=path.as_uri()),
        [types.TextDocumentContentChangeWholeDocument(text=text)])
    return await _diagnostics(client, lambda: client.text_document_did_change(params))


def _spans(diagnostics) -> set[tuple[str, int, int, int, int]]:
    return {(d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
            for d in diagnostics}


def _cli_spans(path) -> set[tuple[str, int, int, int, int]]:
    result = run_process("check", str(path), "--output-format", "json", "--no-cache")
    return {(f["code"], f["line"] - 1, f["column"] - 1, f["end_line"] - 1, f["end_column"] - 1)
            for f in json.loads(result.stdout)}


def _edits(action: types.CodeAction, path, version: int = 1) -> list[types.TextEdit]:
    """The action's edits, which must be for ``version`` of the document (the client
    advertises versioned edits, so it can refuse them once the text has moved on)."""
    (change,) = action.edit.document_changes
    assert change.text_document.uri == path.as_uri() and change.text_document.version == version
    return change.edits


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (ASCII text) as a client does: from the last to the first."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start = starts[edit.range.start.line] + edit.range.start.character
        end = starts[edit.range.end.line] + edit.range.end.character
        text = text[:start] + edit.new_text + text[end:]
    return text


async def test_diagnostics_on_open_match_the_cli(client: LanguageClient, tmp_path):
    path = tmp_path / "model.py"
    path.write_text(HAZARDS)
    published = await _open(client, path, HAZARDS)
    assert _spans(published.diagnostics) == _cli_spans(path)
    assert {d.code for d in published.diagnostics} == {"DTL101", "DTL304"}
    assert {d.source for d in published.diagnostics} == {"dtype-lint"}


async def test_every_fixture_gets_the_clis_findings(client: LanguageClient):
    result = run_process("check", str(FIXTURES), "--output-format", "json", "--no-cache")
    expected: dict[str, set] = {}
    for f in json.loads(result.stdout):
        expected.setdefault(f["path"], set()).add(
            (f["code"], f["line"] - 1, f["column"] - 1, f["end_line"] - 1, f["end_column"] - 1))
    for path in fixture_files():
        published = await _open(client, path, path.read_text(encoding="utf-8"))
        assert _spans(published.diagnostics) == expected.get(str(path), set()), path.name


async def test_columns_count_utf16_units_as_lsp_requires(client: LanguageClient, tmp_path):
    path = tmp_path / "emoji.py"
    text = 'import jax\ny = "\U0001F600"; z = jax.tree_map(f, y)\n'
    path.write_text(text, encoding="utf-8")
    published = (await _open(client, path, text)).diagnostics
    ((code, line, column, end_line, end_column),) = _cli_spans(path)
    # The CLI counts characters; the emoji is two UTF-16 code units.
    assert _spans(published) == {(code, line, column + 1, end_line, end_column + 1)}


async def test_an_unsaved_buffer_is_linted_from_its_text_and_changes_refresh(client: LanguageClient, tmp_path):
    path = tmp_path / "buffer.py"
    path.write_text(CLEAN)
    assert (await _open(client, path, HAZARDS)).diagnostics  # the buffer, not the clean file on disk
    published = await _change(client, path, CLEAN, 2)
    assert published.diagnostics == () and published.version == 2
    published = await _change(client, path, HAZARDS.replace("jax.tree_map", "jax.tree.map"), 3)
    assert [d.code for d in published.diagnostics] == ["DTL101"] and published.version == 3


async def test_code_actions_fix_one_finding_every_safe_one_or_add_noqa(client: LanguageClient, tmp_path):
    path = tmp_path / "model.py"
    path.write_text(HAZARDS)
    published = await _open(client, path, HAZARDS)
    by_code = {d.code: d for d in published.diagnostics}
    document = types.TextDocumentIdentifier(path.as_uri())

    async def actions(diagnostic, only=None):
        context = types.CodeActionContext(diagnostics=[diagnostic], only=only)
        return await client.text_document_code_action_async(
            types.CodeActionParams(document, diagnostic.range, context))

    safe = await actions(by_code["DTL304"])
    one = next(a for a in safe if a.kind == types.CodeActionKind.QuickFix)
    assert one.title == "Fix DTL304 (removed-jax-tree-alias)" and one.is_preferred
    assert "jax.tree.map(lambda" in _apply(HAZARDS, _edits(one, path))

    unsafe = [a for a in await actions(by_code["DTL101"]) if a.kind == types.CodeActionKind.QuickFix]
    assert [a.title for a in unsafe] == ["Fix DTL101 (float32-dtype-default) [unsafe: may change behaviour]",
                                         "Add `# noqa: DTL101` for this line"]
    assert "dtype=None" in _apply(HAZARDS, _edits(unsafe[0], path))

    (fix_all,) = await actions(by_code["DTL101"], only=[types.CodeActionKind.SourceFixAll])
    assert fix_all.kind == "source.fixAll.dtype-lint"
    fixed = run_process("check", "-", "--fix", "--stdin-filename", str(path), stdin=HAZARDS.encode())
    assert _apply(HAZARDS, _edits(fix_all, path)) == fixed.stdout.decode()

    noqa = next(a for a in await actions(by_code["DTL304"]) if "noqa" in a.title)
    assert noqa.title == "Add `# noqa: DTL304` for this line"
    suppressed = _apply(HAZARDS, _edits(noqa, path))
    assert "jax.tree_map(lambda p: p * 2, x)  # noqa: DTL304\n" in suppressed
    published = await _change(client, path, suppressed, 2)
    assert [d.code for d in published.diagnostics] == ["DTL101"]


async def test_fixing_the_file_keeps_crlf_line_ends(client: LanguageClient, tmp_path):
    path = tmp_path / "crlf.py"
    text = HAZARDS.replace("\n", "\r\n") + "y = jax.tree_map(g, x)\r\n"
    published = await _open(client, path, text)
    context = types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])
    (fix_all,) = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(path.as_uri()), published.diagnostics[0].range, context))
    fixed = run_process("check", "-", "--fix", "--stdin-filename", str(path), stdin=text.encode())
    assert _apply(text, _edits(fix_all, path)).encode() == fixed.stdout
    assert b"jax.tree.map(g, x)\r\n" in fixed.stdout


async def test_hover_on_a_diagnostic_shows_the_rules_docs(client: LanguageClient, tmp_path):
    path = tmp_path / "model.py"
    path.write_text(HAZARDS)
    published = await _open(client, path, HAZARDS)
    diagnostic = next(d for d in published.diagnostics if d.code == "DTL304")
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(path.as_uri()), diagnostic.range.start))
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value == run_process("explain", "DTL304").stdout.decode()
    elsewhere = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(path.as_uri()), types.Position(2, 0)))
    assert elsewhere is None


async def test_a_file_that_does_not_parse_leaves_the_server_up(client: LanguageClient, tmp_path):
    path = tmp_path / "model.py"
    assert (await _open(client, path, HAZARDS)).diagnostics
    broken = await _change(client, path, HAZARDS + "def broken(:\n", 2)
    assert broken.diagnostics == ()
    assert any("syntax error" in m.message for m in client.log_messages)
    again = await _change(client, path, HAZARDS, 3)
    assert _spans(again.diagnostics) == _spans((await _open(client, tmp_path / "other.py", HAZARDS)).diagnostics)


async def test_an_internal_error_is_logged_and_every_request_still_answered(client: LanguageClient, tmp_path):
    path = tmp_path / "model.py"
    # A lone surrogate reaches the server through JSON, never through a file; the engine
    # trips over it (not a LintError), which is the server's problem to contain.
    published = await _open(client, path, HAZARDS + 'x = "\ud800"\n')
    assert published.diagnostics == ()
    errors = [m.message for m in client.log_messages if m.type == types.MessageType.Error]
    assert errors and "internal error" in errors[0] and "Traceback" in errors[0]
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(path.as_uri()), types.Position(5, 15)))
    assert hover is None
    assert (await _change(client, path, HAZARDS, 2)).diagnostics


async def test_a_burst_of_changes_is_linted_once_after_it(client: LanguageClient, tmp_path):
    path = tmp_path / "model.py"
    await _open(client, path, CLEAN)

    def burst():
        for version, text in enumerate([CLEAN + "# 2\n", HAZARDS, CLEAN + "# 4\n", HAZARDS], start=2):
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=path.as_uri()),
                [types.TextDocumentContentChangeWholeDocument(text=text)]))

    # The first diagnostics after the burst are those of its last text.
    published = await _diagnostics(client, burst)
    assert published.version == 5 and published.diagnostics


async def test_save_lints_and_close_clears(client: LanguageClient, tmp_path):
    path = tmp_path / "model.py"
    await _open(client, path, CLEAN)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version=2, uri=path.as_uri()),
        [types.TextDocumentContentChangeWholeDocument(text=HAZARDS)]))
    document = types.TextDocumentIdentifier(path.as_uri())
    saved = await _diagnostics(client, lambda: client.text_document_did_save(types.DidSaveTextDocumentParams(document)))
    assert saved.version == 2 and saved.diagnostics
    close = types.DidCloseTextDocumentParams(document)
    closed = await _diagnostics(client, lambda: client.text_document_did_close(close))
    assert closed.diagnostics == ()


async def test_the_documents_configuration_applies_and_a_broken_one_is_shown(client: LanguageClient, tmp_path):
    strict = tmp_path / "strict"
    strict.mkdir()
    (strict / "pyproject.toml").write_text('[tool.dtype-lint]\nignore = ["DTL101"]\n')
    assert [d.code for d in (await _open(client, strict / "a.py", HAZARDS)).diagnostics] == []
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "pyproject.toml").write_text('[tool.dtype-lint]\nselect = ["XYZ"]\n')
    assert (await _open(client, broken / "a.py", HAZARDS)).diagnostics == ()
    assert any(m.message.startswith("dtype-lint: config error: ") and "unknown rule code or prefix 'XYZ'" in m.message
               and m.type == types.MessageType.Error for m in client.messages)


async def test_the_server_starts_without_libcst_and_is_in_the_help():
    check = "import sys, dtype_lint.frontends.server.app; assert 'libcst' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", check], timeout=120).returncode == 0
    assert "run the language server over stdio" in run_process("--help").stdout.decode()


def _slow(functions: int = 300) -> str:
    """A document whose lint takes the server a second or more: many functions, each
    with findings (no mock: the engine really works through all of them)."""
    return "import jax\nimport torch\n" + "".join(
        f"\n\ndef f{i}(x, dtype=torch.float32):\n    y = x.to(torch.float32)\n    return jax.tree_map(lambda p: p * 2, y)\n"
        for i in range(functions))


async def test_hover_is_answered_while_a_long_lint_runs(client: LanguageClient, tmp_path):
    small, big = tmp_path / "small.py", tmp_path / "big.py"
    diagnostic = next(d for d in (await _open(client, small, HAZARDS)).diagnostics if d.code == "DTL304")
    published = client.protocol.wait_for_notification_async(PUBLISH)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=big.as_uri(), language_id="python", version=1, text=_slow())))
    await asyncio.sleep(0.3)  # the big document's lint has started
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(small.as_uri()), diagnostic.range.start))
    assert not published.done()  # answered before the lint ended, not after it
    assert hover.contents.value.startswith("# removed-jax-tree-alias (DTL304)")
    assert len((await asyncio.wait_for(published, TIMEOUT)).diagnostics) == 300 * 2  # DTL101, DTL304 each


async def test_a_stale_lint_is_never_published_after_a_newer_version(client: LanguageClient, tmp_path):
    path = tmp_path / "model.py"
    await _open(client, path, CLEAN)

    def change(version: int, text: str) -> None:
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=version, uri=path.as_uri()),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))

    change(2, _slow())
    await asyncio.sleep(0.15 + 0.3)  # past the pause: version 2 is being linted
    change(3, HAZARDS)
    versions = []
    while not versions or versions[-1] != 3:  # 3 is linted after 2's lint (one lint thread)
        published = await asyncio.wait_for(client.protocol.wait_for_notification_async(PUBLISH), TIMEOUT)
        versions.append(published.version)
    assert versions == [3]
    assert {d.code for d in published.diagnostics} == {"DTL101", "DTL304"}


async def test_code_actions_are_only_for_the_linted_version(client: LanguageClient, tmp_path):
    path = tmp_path / "model.py"
    diagnostic = next(d for d in (await _open(client, path, HAZARDS)).diagnostics if d.code == "DTL304")
    document = types.TextDocumentIdentifier(path.as_uri())
    params = types.CodeActionParams(document, diagnostic.range, types.CodeActionContext(diagnostics=[diagnostic]))
    moved = "\n\n" + HAZARDS  # the finding is two lines further down now
    waiter = client.protocol.wait_for_notification_async(PUBLISH)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version=2, uri=path.as_uri()),
        [types.TextDocumentContentChangeWholeDocument(text=moved)]))
    # Within the pause, the only lint there is is of version 1: nothing is offered for 2.
    assert not await client.text_document_code_action_async(params)
    assert await client.text_document_hover_async(types.HoverParams(document, diagnostic.range.start)) is None
    published = await asyncio.wait_for(waiter, TIMEOUT)
    assert published.version == 2
    moved_range = next(d for d in published.diagnostics if d.code == "DTL304").range
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        document, moved_range, types.CodeActionContext(diagnostics=[])))
    assert "jax.tree.map(lambda" in _apply(moved, _edits(actions[0], path, version=2))


async def test_diagnostics_link_the_rules_docs_and_are_as_severe_as_in_sarif(client: LanguageClient, tmp_path):
    from dtype_lint.rules.registry import all_docs

    path = tmp_path / "model.py"
    path.write_text(HAZARDS)
    published = (await _open(client, path, HAZARDS)).diagnostics
    docs = all_docs()
    assert {d.code: d.code_description.href for d in published} == {d.code: docs[d.code].help_uri for d in published}
    sarif = json.loads(run_process("check", str(path), "--output-format", "sarif", "--no-cache").stdout)
    levels = {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"] - 1): r["level"]
              for r in sarif["runs"][0]["results"]}
    # SARIF's levels as LSP names them (the LSP and SARIF specifications).
    as_lsp = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
              "note": types.DiagnosticSeverity.Information}
    assert {(d.code, d.range.start.line): d.severity for d in published} == {k: as_lsp[v] for k, v in levels.items()}
    github = run_process("check", str(path), "--output-format", "github", "--no-cache").stdout.decode()
    assert sorted(line.split(" ", 1)[0] for line in github.splitlines()) == sorted(
        f"::{levels[d.code, d.range.start.line]}" for d in published)
