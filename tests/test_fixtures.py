"""Every fixture: the CLI reports exactly the `# expect:` lines, and flake8 agrees with it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import FIXTURES, expectations, fixture_files, leveled_expectations


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_cli_matches_expectations(cli, path):
    result = cli("check", str(path), "--output-format", "json")
    got = {(f["line"], f["code"]) for f in result.json()}
    assert got == expectations(path)
    assert result.code == (1 if got else 0)


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_the_audit_mode_reports_every_expectation_at_its_confidence(cli, path):
    result = cli("check", str(path), "--output-format", "json", "--min-confidence", "low")
    assert {(f["line"], f["code"], f["confidence"]) for f in result.json()} == leveled_expectations(path)


def test_the_prefilter_changes_no_finding_at_any_confidence(cli):
    # The prefilter cuts away what it judges no rule can use; a check that reads a part
    # it cut (a function body, an import) would lose findings or sanitizers silently.
    paths = [str(p) for p in fixture_files()]
    runs = [cli("check", *paths, "--output-format", "json", "--min-confidence", "low", *extra).json()
            for extra in ([], ["--no-prefilter"])]
    with_prefilter, without = ({(f["path"], f["line"], f["code"], f["confidence"]) for f in run} for run in runs)
    assert with_prefilter == without


def test_every_fixture_has_expectations_and_look_alikes():
    for path in fixture_files():
        text = path.read_text(encoding="utf-8")
        assert leveled_expectations(path), f"{path.name} has no `# expect:` lines"
        assert "Valid look-alikes" in text, f"{path.name} has no valid look-alikes section"


def test_flake8_reports_the_same_as_the_cli(cli):
    paths = [str(p) for p in fixture_files()]
    cli_result = cli("check", *paths, "--output-format", "json")
    expected = {(f["path"], f["line"], f["column"], f["code"]) for f in cli_result.json()}
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "DTL", "--format", "%(path)s|%(row)d|%(col)d|%(code)s",
         *paths],
        capture_output=True, text=True, cwd=FIXTURES.parent, timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    got = set()
    for line in proc.stdout.splitlines():
        path, row, col, code = line.split("|")
        got.add((path, int(row), int(col), code))
    assert got == expected


def test_flake8_honours_its_own_noqa_and_select(tmp_path):
    source = (
        "import torch\n"
        "def f(x, dtype=torch.float32): ...\n"
        "def g(x, dtype=torch.float32): ...  # noqa: DTL101\n"
        "d = m.get(k, torch.float32)\n"
    )
    path = tmp_path / "mod.py"
    path.write_text(source)
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "DTL101", "--format", "%(row)d %(code)s", str(path)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.stdout.split("\n")[:-1] == ["2 DTL101"]


def test_flake8_per_file_ignores_and_rule_options(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dtype-lint]\ncompute-dtype-names = ["dtype", "acc_dtype"]\n'
    )
    (tmp_path / "setup.cfg").write_text("[flake8]\nper-file-ignores =\n    skip_*.py: DTL\n")
    body = "import torch\ndef f(x, acc_dtype=torch.float32): ...\n"
    (tmp_path / "mod.py").write_text(body)
    (tmp_path / "skip_me.py").write_text(body)
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "DTL", "--format", "%(path)s %(code)s", "."],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )
    assert proc.stdout.split("\n")[:-1] == ["./mod.py DTL101"]
