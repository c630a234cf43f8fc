"""The multi-file fixture package (`fixtures/xfile`): findings whose evidence is in another
file of the package (or the installed torch), through the CLI, flake8 and the language
server alike, each carrying its path; a warm run re-lints exactly what consulted an
edited file."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import FIXTURES, expectations, package_fixture_files
from test_sarif import validator

PACKAGE = FIXTURES / "xfile"
FILES = package_fixture_files()


def expected() -> set[tuple[str, int, str]]:
    return {(path.relative_to(FIXTURES).as_posix(), line, code) for path in FILES
            for line, code in expectations(path)}


def test_the_package_holds_each_family_across_files():
    codes = {code for _, _, code in expected()}
    assert {"DTL204", "DTL303"} <= codes
    assert len({path for path, _, _ in expected()}) >= 3


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
def test_cli_reports_exactly_the_expectations(cli, prefilter):
    result = cli("check", "xfile", "--no-cache", "--output-format", "json",
                 *([] if prefilter else ["--no-prefilter"]), cwd=FIXTURES)
    assert {(f["path"], f["line"], f["code"]) for f in result.json()} == expected()


@pytest.mark.parametrize("name", ["train.py", "loaders.py"])
def test_findings_from_other_files_name_them_and_carry_the_path(cli, name):
    result = cli("check", f"xfile/{name}", "--no-cache", "--output-format", "json", cwd=FIXTURES)
    findings = result.json()
    assert len(findings) == len(expectations(PACKAGE / name))
    for f in findings:
        steps = f["flow"]
        assert steps, f
        elsewhere = [s for s in steps if s["path"] != f"xfile/{name}"]
        assert elsewhere, f
        for step in elsewhere:  # each step is a real place: its line exists in its file
            lines = (FIXTURES / step["path"]).read_text(encoding="utf-8").splitlines()
            assert 1 <= step["line"] <= len(lines) and step["message"]
        # the message says where the evidence is, as `path:line`
        assert re.search(r"xfile/[\w/]+\.py:\d+", f["message"]), f["message"]


def test_show_flow_prints_each_step(cli):
    result = cli("check", "xfile/train.py", "--no-cache", "--show-flow", cwd=FIXTURES)
    assert "via xfile/nets/heads.py:10:" in result.out
    assert "via xfile/utils/precision.py:" in result.out


def test_sarif_code_flows_are_valid_and_lead_to_the_other_files(cli):
    result = cli("check", "xfile", "--no-cache", "--output-format", "sarif", cwd=FIXTURES)
    log = result.json()
    validator().validate(log)
    flows = [r for r in log["runs"][0]["results"] if "codeFlows" in r]
    assert len(flows) >= 6
    uris = {loc["location"]["physicalLocation"]["artifactLocation"]["uri"]
            for r in flows for loc in r["codeFlows"][0]["threadFlows"][0]["locations"]}
    assert {"xfile/nets/heads.py", "xfile/utils/precision.py", "xfile/layers.py"} <= uris


def test_flake8_reports_what_the_cli_does():
    cli_json = subprocess.run([sys.executable, "-m", "dtype_lint", "check", "xfile", "--no-cache",
                               "--output-format", "json", "--exit-zero"],
                              capture_output=True, text=True, cwd=FIXTURES, timeout=300)
    import json

    expected_rows = {(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(cli_json.stdout)}
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "DTL", "--format", "%(path)s|%(row)d|%(col)d|%(code)s", "xfile"],
        capture_output=True, text=True, cwd=FIXTURES, timeout=300,
    )
    got = set()
    for line in proc.stdout.splitlines():
        path, row, col, code = line.split("|")
        got.add((path.removeprefix("./"), int(row), int(col), code))
    assert got == expected_rows and len(got) == len(expected())


def test_a_warm_run_relints_what_consulted_an_edited_file_and_no_other(cli, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(PACKAGE, project / "xfile")
    cache = str(tmp_path / "cache")

    def run() -> tuple[set[tuple[str, int, str]], int]:
        result = cli("check", "xfile", "--cache-dir", cache, "--output-format", "json", "-v", cwd=project)
        linted = int(re.search(r"(\d+) linted", result.err).group(1))
        return {(f["path"], f["line"], f["code"]) for f in result.json()}, linted

    first, linted = run()
    assert first == expected() and linted == len(FILES)
    assert run() == (first, 0)
    # Base stops being a module: what derived from it (here and in other files) changes.
    base = project / "xfile" / "nets" / "base.py"
    base.write_text(base.read_text(encoding="utf-8").replace("class Base(nn.Module):", "class Base:"),
                    encoding="utf-8")
    after, linted = run()
    # base.py itself, heads.py (Scorer derives from it), train.py (Scorer's and Lambda's
    # constructors), scorers.py (Scorer's constructor through super()), blocks.py
    # (whether Float32Norm casts back) and inherited.py (the forward and the callers its
    # classes inherit); not layers.py (nothing there asked what Base is), nor
    # precision.py, nor finetune.py, nor the __init__ files.
    assert linted == 6
    gone = first - after
    assert {path for path, _, _ in gone} == {"xfile/nets/heads.py", "xfile/train.py", "xfile/scorers.py"}
    assert ("xfile/nets/heads.py", 21, "DTL204") in after  # Gate's base is another module


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "dtype_lint", "server"]))
async def client(lsp_client: LanguageClient, tmp_path):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def _published(client: LanguageClient, uri: str, send) -> types.PublishDiagnosticsParams:
    loop = asyncio.get_running_loop()
    while True:
        waiter = client.protocol.wait_for_notification_async(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if send is not None:
            send()
            send = None
        params = await asyncio.wait_for(waiter, 60)
        if params.uri == uri:
            return params
        assert loop.is_running()


@pytest.mark.asyncio
async def test_the_server_shows_the_path_and_a_saved_dependency_refreshes(client: LanguageClient, tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "xfile")
    train = tmp_path / "xfile" / "train.py"
    uri = train.as_uri()
    item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text=train.read_text(encoding="utf-8"))
    shown = await _published(client, uri, lambda: client.text_document_did_open(types.DidOpenTextDocumentParams(item)))
    assert {d.range.start.line + 1 for d in shown.diagnostics} == {line for line, _ in expectations(train)}
    related = {r.location.uri for d in shown.diagnostics for r in d.related_information or ()}
    assert (tmp_path / "xfile" / "nets" / "heads.py").as_uri() in related
    # The helpers' file is edited and saved: train.py, which consulted it, is linted again.
    precision = tmp_path / "xfile" / "utils" / "precision.py"
    precision.write_text(precision.read_text(encoding="utf-8").replace("p.data = p.data.half()", "pass"),
                         encoding="utf-8")
    saved = types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=precision.as_uri()))
    again = await _published(client, uri, lambda: client.text_document_did_save(saved))
    assert len(again.diagnostics) == len(shown.diagnostics) - 1


def test_summaries_persist_in_the_cache_by_content(cli, tmp_path, monkeypatch):
    from dtype_lint.core.model import project, summary

    shutil.copytree(PACKAGE, tmp_path / "xfile")
    cache = str(tmp_path / "cache")
    monkeypatch.setattr(project, "_MODELS", {})  # a fresh process's model
    first = cli("check", "xfile", "-j", "1", "--cache-dir", cache, "--output-format", "json", cwd=tmp_path).json()
    assert any((tmp_path / "cache" / "summaries").rglob("*.json"))
    # Another run, another process: train.py edited, so it is linted again, and the files
    # it consulted are read from the stored summaries, not summarised again.
    train = tmp_path / "xfile" / "train.py"
    train.write_text(train.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    monkeypatch.setattr(project, "_MODELS", {})

    def only_the_edited_file(text, name, *args, **kwargs):
        assert name == "xfile.train", f"{name} summarised again"
        return summary.summarize(text, name, *args, **kwargs)

    monkeypatch.setattr(project, "summarize", only_the_edited_file)
    again = cli("check", "xfile", "-j", "1", "--cache-dir", cache, "--output-format", "json", "-v", cwd=tmp_path)
    assert "1 linted" in again.err
    assert {(f["path"], f["line"], f["code"]) for f in again.json()} == {
        (f["path"], f["line"], f["code"]) for f in first}
