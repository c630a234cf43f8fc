"""The CLI: exit codes, stdin, output formats, statistics, explain, rules, bad files, a
closed pipe."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

import pytest

from conftest import (FIXTURES, ROOT, expectations, fixture_files, notebook_expectations, notebook_fixtures,
                      package_fixture_files, run_process)

HAZARD = "import torch\ndef f(x, dtype=torch.float32):\n    return x\n"
CLEAN = "def f(x, dtype=None):\n    return x\n"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bad.py").write_text(HAZARD)
    (tmp_path / "good.py").write_text(CLEAN)
    return tmp_path


def test_exit_codes(cli, project):
    assert cli("check", str(project / "good.py")).code == 0
    assert cli("check", str(project / "bad.py")).code == 1
    assert cli("check", str(project / "bad.py"), "--exit-zero").code == 0
    assert cli("check", str(project / "missing.py")).code == 2


def test_default_path_is_the_working_directory(cli, project):
    result = cli("check", cwd=project)
    assert result.out.startswith("bad.py:2:16: DTL101 ")
    assert result.code == 1


def test_text_output_is_sorted_and_one_based(cli, project):
    (project / "a.py").write_text("import torch\nx = m.get(k, torch.float32)\n" + HAZARD.replace("import torch\n", ""))
    lines = cli("check", str(project), "-q").out.splitlines()
    keys = [line.split(": ")[0] for line in lines]
    assert keys == sorted(keys, key=lambda k: (k.split(":")[0], int(k.split(":")[1]), int(k.split(":")[2])))
    assert lines[0].startswith(f"{project / 'a.py'}:2:14: DTL102 ")


def test_unparsable_file_is_reported_and_others_still_linted(cli, project):
    (project / "broken.py").write_text("def f(:\n")
    result = cli("check", str(project))
    assert "broken.py:1:7: error: syntax error: invalid syntax" in result.err
    assert "bad.py:2:16: DTL101" in result.out
    assert result.code == 2


def test_stdin(cli):
    result = cli("check", "-", "--stdin-filename", "model.py", stdin=HAZARD.encode())
    assert result.out.startswith("model.py:2:16: DTL101 ")
    assert result.code == 1
    assert cli("check", "-", stdin=CLEAN.encode()).code == 0


def test_json_has_exactly_the_documented_keys(cli, project):
    findings = cli("check", str(project), "--output-format", "json").json()
    assert len(findings) == 1
    finding = findings[0]
    assert set(finding) == {"path", "line", "column", "end_line", "end_column", "code", "name", "message",
                            "confidence", "basis", "fix"}
    # A plain function's float32 default: that its values meet the activations is assumed.
    assert finding["confidence"] == "medium" and finding["basis"]
    assert (finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (2, 16, 2, 29)
    assert finding["name"] == "float32-dtype-default"
    assert finding["fix"]["applicability"] == "unsafe"
    assert finding["fix"]["edits"] == [
        {"line": 2, "column": 16, "end_line": 2, "end_column": 29, "content": "None"}
    ]


def test_sarif_structure(cli):
    log = json.loads(cli("check", str(FIXTURES), "--output-format", "sarif").out)
    assert log["version"] == "2.1.0" and "$schema" in log
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert ids == sorted(ids) and "DTL101" in ids
    for rule in rules:
        assert {"id", "name", "shortDescription", "fullDescription", "help"} <= set(rule)
    assert run["results"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert result["level"] in ("error", "warning", "note")
        assert result["message"]["text"]


def test_github_annotations(cli, project):
    out = cli("check", str(project / "bad.py"), "--output-format", "github").out
    # A medium finding (a plain function's default) is a warning; a high one an error.
    assert out.startswith(f"::warning title=dtype-lint (DTL101),file={project / 'bad.py'},line=2,col=16,")


def test_full_output_shows_the_line_and_a_caret(cli, project):
    out = cli("check", str(project / "bad.py"), "--output-format", "full").out.splitlines()
    assert out[1].endswith("def f(x, dtype=torch.float32):")
    assert out[2].index("^") == out[1].index("torch.float32")
    assert out[2].count("^") == len("torch.float32")


def test_statistics(cli):
    out = cli("check", str(FIXTURES), "--statistics", "-q").out
    counts = {line.split()[1]: int(line.split()[0]) for line in out.splitlines()}
    expected = collections.Counter(code for path in fixture_files() + package_fixture_files()
                                   for _, code in expectations(path))
    expected.update(code for path in notebook_fixtures() for _, _, code in notebook_expectations(path))
    assert counts == dict(expected)


def test_select_and_ignore_flags(cli, project):
    assert cli("check", str(project), "--select", "DTL2").code == 0
    assert cli("check", str(project), "--ignore", "DTL1").code == 0
    result = cli("check", str(project), "--select", "DTL9")
    assert result.code == 2 and "DTL9" in result.err


def test_explain_and_rules(cli):
    result = cli("explain", "DTL301")
    assert result.code == 0 and result.out.startswith("# tree-map-recast (DTL301)")
    assert "## Why is this bad?" in result.out
    assert cli("explain", "DTL999").code == 2
    rules = json.loads(cli("rules", "--json").out)
    assert {r["code"] for r in rules} >= {"DTL101", "DTL204", "DTL303", "DTL191"}


def test_console_script_runs_as_a_process(project):
    proc = run_process("check", str(project))
    assert proc.returncode == 1
    assert b"DTL101" in proc.stdout
    assert run_process("--version").stdout.startswith(b"dtype-lint ")


@pytest.mark.parametrize(("fmt", "placed"), [
    ("text", "broken.py:1:7: error: syntax error: invalid syntax"),
    ("json", "broken.py:1:7: error: syntax error: invalid syntax"),
    ("github", "::error title=dtype-lint,file=broken.py,line=1,col=7::syntax error: invalid syntax"),
])
def test_syntax_error_carries_its_one_position_in_every_format(cli, tmp_path, fmt, placed):
    (tmp_path / "broken.py").write_text("def f(:\n")
    result = cli("check", "--no-cache", "broken.py", "--output-format", fmt, cwd=tmp_path)
    assert result.err.splitlines() == [placed]
    assert result.code == 2


def test_sarif_notification_places_a_syntax_error(cli, tmp_path):
    (tmp_path / "broken.py").write_text("x = 1\ndef f(:\n")
    log = cli("check", "--no-cache", "broken.py", "--output-format", "sarif", cwd=tmp_path).json()
    [note] = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 7}
    assert note["message"]["text"] == "syntax error: invalid syntax"


@pytest.mark.parametrize("args", [("check", "fixtures", "--no-cache"),
                                  ("check", "fixtures", "--no-cache", "--output-format", "json"),
                                  ("rules",)],
                         ids=["text", "json", "rules"])
def test_a_closed_pipe_ends_the_command_quietly(args):
    """`dtype-lint check fixtures/ | head -1`, made certain: the reading end is closed
    before the command writes, so that its first write finds no reader. Like ruff, it
    stops with no traceback and exit 0."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "dtype_lint", *args], stdout=write_end, stderr=subprocess.PIPE,
                              cwd=ROOT, timeout=300)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr.decode()) == (0, "")


def test_head_reads_the_first_finding_and_nothing_else_is_printed():
    proc = subprocess.run(["sh", "-c", '"$0" -m dtype_lint check fixtures --no-cache | head -1', sys.executable],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.stdout.startswith("fixtures/") and proc.stdout.count("\n") == 1
    assert proc.stderr == ""
