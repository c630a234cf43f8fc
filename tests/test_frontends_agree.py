"""Every front-end honours the same suppressions and refuses the same broken
configuration: the CLI, flake8, mypy (its plugin) and the language server, each run for
real on the same files.

Two tables. SUPPRESSIONS: a file with a DTL101 on a Flax field default (which the mypy
plugin finds by type as well) and one on a function default, silenced or not by a
`# noqa`, the file-level `# dtype-lint: noqa`, or `[tool.dtype-lint]` (`ignore`,
`per-file-ignores`, `select`, `min-confidence`); every front-end reports exactly the lines
the table says.
BROKEN: a `[tool.dtype-lint]` table that cannot be used; every front-end says so in the
CLI's words (`dtype-lint: config error: ...`), the command-line ones with exit code 2,
which is neither the findings code (1) nor success, and the server in an error message.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import ROOT

pytest.importorskip("mypy.api")

MYPY_CONFIG = ROOT / "tests" / "mypy" / "data" / "mypy.ini"
TIMEOUT = 60

SOURCE = '''\
from typing import Any{head}

import flax.linen as nn
import jax.numpy as jnp


class Dense(nn.Module):
    features: int
    dtype: Any = jnp.float32{comment}


def scale(x: Any, dtype: Any = jnp.float32) -> Any:{comment}
    return x
'''
HAZARD_LINES = {9, 12}  # both DTL101

# case: (the [tool.dtype-lint] table's body, the comment on each hazard's line,
#        whether the file starts with the file-level noqa, whether the hazards are reported)
SUPPRESSIONS = {
    "plain": ("", "", False, True),
    "noqa_code": ("", "  # noqa: DTL101", False, False),
    "noqa_bare": ("", "  # noqa", False, False),
    "noqa_prefix": ("", "  # noqa: DTL1", False, False),
    "noqa_listed": ("", "  # noqa: E501, DTL101", False, False),
    "noqa_other_code": ("", "  # noqa: DTL102", False, True),
    "file_noqa": ("", "", True, False),
    "ignore": ('ignore = ["DTL101"]', "", False, False),
    "per_file_ignores": ('per-file-ignores = {"per_file_ignores.py" = ["DTL1"]}', "", False, False),
    "per_file_ignores_elsewhere": ('per-file-ignores = {"other.py" = ["DTL1"]}', "", False, True),
    "select": ('select = ["DTL2"]', "", False, False),
    # The layer's field is a high finding, the plain function's default a medium one.
    "min_confidence_high": ('min-confidence = "high"', "", False, {9}),
    "min_confidence_low": ('min-confidence = "low"', "", False, True),
}


def _expected(case: str) -> set[int]:
    reported = SUPPRESSIONS[case][3]
    return set(reported) if isinstance(reported, set) else HAZARD_LINES if reported else set()


@pytest.fixture(scope="module")
def suppression_cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder per case, each with its own pyproject.toml and a file named after it
    (distinct module names, so that mypy checks them all in one run)."""
    root = tmp_path_factory.mktemp("suppressions")
    for case, (table, comment, file_noqa, _) in SUPPRESSIONS.items():
        folder = root / case
        folder.mkdir()
        (folder / "pyproject.toml").write_text(f"[tool.dtype-lint]\n{table}\n", encoding="utf-8")
        head = "  # dtype-lint: noqa" if file_noqa else ""
        (folder / f"{case}.py").write_text(SOURCE.format(head=head, comment=comment), encoding="utf-8")
    return root


def _case_file(root: Path, case: str) -> Path:
    return root / case / f"{case}.py"


def _mypy(*args: str, cache: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(MYPY_CONFIG), "--cache-dir", str(cache),
                           "--no-error-summary", *args], capture_output=True, text=True, cwd=cwd, timeout=900)


def _reported_by_cli(root: Path, cli) -> dict[str, set[int]]:
    found = {}
    for case in SUPPRESSIONS:
        # The CLI takes one configuration per run, the one found from its first path.
        result = cli("check", str(root / case), "--output-format", "json", "--no-cache")
        assert result.code in (0, 1), result.err
        found[case] = {f["line"] for f in result.json() if f["code"] == "DTL101"}
    return found


def _reported_by_flake8(root: Path) -> dict[str, set[int]]:
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "DTL",
                           "--format", "%(path)s|%(row)d|%(code)s", str(root)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    found: dict[str, set[int]] = {case: set() for case in SUPPRESSIONS}
    for line in proc.stdout.splitlines():
        path, row, code = line.split("|")
        if code == "DTL101":
            found[Path(path).stem].add(int(row))
    return found


def _reported_by_mypy(root: Path, cache: Path) -> dict[str, set[int]]:
    files = [str(_case_file(root, case)) for case in SUPPRESSIONS]
    proc = _mypy(*files, cache=cache, cwd=root)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    found: dict[str, set[int]] = {case: set() for case in SUPPRESSIONS}
    for line in proc.stdout.splitlines():
        if line.endswith("[DTL101]"):
            path, row = line.split(":")[:2]
            found[Path(path).stem].add(int(row))
    return found


@pytest.mark.parametrize("frontend", ["cli", "flake8", "mypy"])
def test_suppressions_are_the_same_in_every_command_line_frontend(frontend, suppression_cases, cli, mypy_cache):
    pytest.importorskip("flax")
    if frontend == "cli":
        found = _reported_by_cli(suppression_cases, cli)
    elif frontend == "flake8":
        found = _reported_by_flake8(suppression_cases)
    else:
        found = _reported_by_mypy(suppression_cases, mypy_cache)
    assert found == {case: _expected(case) for case in SUPPRESSIONS}


def test_mypy_passes_once_add_noqa_has_run(tmp_path, cli, mypy_cache):
    """Adopting dtype-lint on existing code: `--add-noqa` silences mypy's errors too."""
    pytest.importorskip("flax")
    path = tmp_path / "adopted.py"
    path.write_text(SOURCE.format(head="", comment=""), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.dtype-lint]\n", encoding="utf-8")
    before = _mypy(str(path), cache=mypy_cache, cwd=tmp_path)
    assert before.returncode == 1 and before.stdout.count("[DTL101]") == 2, before.stdout + before.stderr
    assert cli("check", str(tmp_path), "--add-noqa", "--no-cache").code == 0
    after = _mypy(str(path), cache=mypy_cache, cwd=tmp_path)
    assert after.returncode == 0 and "DTL" not in after.stdout, after.stdout + after.stderr


# -- broken configurations -----------------------------------------------------------

# A hazard that needs no import (mypy checks it in a second) under each broken table;
# the valid keys beside the broken one are not applied either.
HAZARD = 'def f(x, dtype="float32"):\n    return x\n'
BROKEN = {
    "unknown_key": '[tool.dtype-lint]\nexclud = ["build"]\nignore = ["DTL101"]\n',
    "invalid_toml": '[tool.dtype-lint\nignore = ["DTL101"]\n',
    "wrong_type": '[tool.dtype-lint]\nselect = "DTL1"\n',
    "unknown_code": '[tool.dtype-lint]\nignore = ["DTL999"]\n',
}


@pytest.fixture(params=sorted(BROKEN))
def broken(request, tmp_path) -> tuple[Path, str]:
    """A project with a broken table, and the CLI's line for it."""
    (tmp_path / "pyproject.toml").write_text(BROKEN[request.param], encoding="utf-8")
    (tmp_path / "hazard.py").write_text(HAZARD, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "dtype_lint", "check", "hazard.py", "--no-cache"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("dtype-lint: config error: ") and str(tmp_path / "pyproject.toml") in line
    return tmp_path, line


def test_flake8_refuses_a_broken_configuration_at_start_up(broken):
    project, line = broken
    for args in (["hazard.py"], []):  # a file, and flake8's default: the working folder
        proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "DTL", *args],
                              capture_output=True, text=True, cwd=project, timeout=300)
        assert (proc.returncode, proc.stdout, proc.stderr.splitlines()) == (2, "", [line])


def test_flake8_refuses_a_broken_configuration_below_the_paths_it_was_given(broken):
    # The broken table applies to sub/ only; the run starts above it, under a valid one.
    project, line = broken
    (project / "sub").mkdir()
    (project / "pyproject.toml").rename(project / "sub" / "pyproject.toml")
    (project / "hazard.py").rename(project / "sub" / "hazard.py")
    (project / "pyproject.toml").write_text("[tool.dtype-lint]\n", encoding="utf-8")
    (project / "clean.py").write_text("x = 1\n", encoding="utf-8")
    line = line.replace(str(project / "pyproject.toml"), str(project / "sub" / "pyproject.toml"))
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "DTL", "."],
                          capture_output=True, text=True, cwd=project, timeout=300)
    assert (proc.returncode, proc.stdout, proc.stderr.splitlines()) == (2, "", [line])
    # Excluded, it is not read.
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "DTL", "--exclude", "sub", "."],
                          capture_output=True, text=True, cwd=project, timeout=300)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_mypy_refuses_a_broken_configuration(broken, tmp_path_factory):
    project, line = broken
    cache = tmp_path_factory.mktemp("mypy-cache-broken")
    proc = _mypy("hazard.py", cache=cache, cwd=project)
    assert (proc.returncode, proc.stdout, proc.stderr.splitlines()) == (2, "", [line])


def test_mypy_refuses_a_configuration_broken_after_a_clean_run(tmp_path):
    """A warm run that would answer every file from the cache still reads the table."""
    (tmp_path / "hazard.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.dtype-lint]\n", encoding="utf-8")
    cache = tmp_path / "cache"
    assert _mypy("hazard.py", cache=cache, cwd=tmp_path).returncode == 1
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\nignore = ["DTL101"]\n', encoding="utf-8")
    assert _mypy("hazard.py", cache=cache, cwd=tmp_path).returncode == 0  # a changed table is read anew
    (tmp_path / "pyproject.toml").write_text(BROKEN["unknown_key"], encoding="utf-8")
    proc = _mypy("hazard.py", cache=cache, cwd=tmp_path)
    assert proc.returncode == 2 and "dtype-lint: config error: " in proc.stderr, proc.stdout + proc.stderr


# -- the language server ----------------------------------------------------------------


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "dtype_lint", "server"]))
async def client(lsp_client: LanguageClient, tmp_path):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, path: Path) -> types.PublishDiagnosticsParams:
    waiter = client.protocol.wait_for_notification_async(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    item = types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1,
                                  text=path.read_text(encoding="utf-8"))
    client.text_document_did_open(types.DidOpenTextDocumentParams(item))
    return await asyncio.wait_for(waiter, TIMEOUT)


@pytest.mark.asyncio
async def test_suppressions_are_the_same_in_the_server(client: LanguageClient, suppression_cases):
    found = {}
    for case in SUPPRESSIONS:
        published = await _open(client, _case_file(suppression_cases, case))
        found[case] = {d.range.start.line + 1 for d in published.diagnostics if d.code == "DTL101"}
    assert found == {case: _expected(case) for case in SUPPRESSIONS}


@pytest.mark.asyncio
async def test_the_server_shows_a_broken_configuration_as_an_error(client: LanguageClient, broken):
    project, line = broken
    assert (await _open(client, project / "hazard.py")).diagnostics == ()
    shown = [m for m in client.messages if m.type == types.MessageType.Error]
    assert [m.message for m in shown] == [line]

