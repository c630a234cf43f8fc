"""[tool.dtype-lint]: discovery, selection, per-file-ignores, exclude, options, errors."""

from __future__ import annotations

import pytest

HAZARD = "import torch\ndef f(x, dtype=torch.float32):\n    return x\n"


def write_project(root, table: str, files: dict[str, str]):
    (root / "pyproject.toml").write_text("[tool.dtype-lint]\n" + table)
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)


def test_config_found_by_walking_up(cli, tmp_path):
    write_project(tmp_path, 'ignore = ["DTL101"]\n', {"pkg/sub/mod.py": HAZARD})
    assert cli("check", str(tmp_path / "pkg" / "sub")).code == 0


def test_config_flag_overrides_discovery(cli, tmp_path):
    write_project(tmp_path, 'ignore = ["DTL101"]\n', {"mod.py": HAZARD})
    other = tmp_path / "other.toml"
    other.write_text("[tool.dtype-lint]\nselect = ['DTL1']\n")
    assert cli("check", str(tmp_path / "mod.py"), "--config", str(other)).code == 1


def test_select_extend_select_and_prefixes(cli, tmp_path):
    body = HAZARD + "import jax\njax.tree_map(f, t)\n"
    write_project(tmp_path, 'select = ["DTL2"]\nextend-select = ["DTL304"]\n', {"mod.py": body})
    codes = {f["code"] for f in cli("check", str(tmp_path), "--output-format", "json").json()}
    assert codes == {"DTL304"}


def test_per_file_ignores(cli, tmp_path):
    write_project(tmp_path, '[tool.dtype-lint.per-file-ignores]\n"tests/*" = ["DTL1"]\n',
                  {"tests/test_mod.py": HAZARD, "src/mod.py": HAZARD})
    paths = {f["path"] for f in cli("check", str(tmp_path), "--output-format", "json").json()}
    assert paths == {str(tmp_path / "src" / "mod.py")}


def test_exclude_and_default_excludes(cli, tmp_path):
    write_project(tmp_path, 'extend-exclude = ["generated/"]\n',
                  {"generated/mod.py": HAZARD, ".venv/lib/mod.py": HAZARD, "build/mod.py": HAZARD,
                   "ok/mod.py": HAZARD})
    paths = {f["path"] for f in cli("check", str(tmp_path), "--output-format", "json").json()}
    assert paths == {str(tmp_path / "ok" / "mod.py")}


def test_rule_options(cli, tmp_path):
    body = "import torch\ndef f(x, acc_dtype=torch.float32, dtype=torch.float32): ...\n"
    write_project(tmp_path, 'compute-dtype-names = ["acc_dtype"]\n', {"mod.py": body})
    findings = cli("check", str(tmp_path), "--output-format", "json").json()
    assert [f["column"] for f in findings] == [20]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('selct = ["DTL1"]\n', "unknown key 'selct'"),
        ('select = ["DTL9"]\n', "unknown rule code or prefix 'DTL9'"),
        ('ignore = "DTL1"\n', "'ignore' must be a list of strings"),
        ('param-dtype-names = [1]\n', "'param-dtype-names' must be a list of strings"),
        ('[tool.dtype-lint.per-file-ignores]\n"a.py" = ["XYZ1"]\n', "unknown rule code or prefix 'XYZ1'"),
        ("select = [\n", "invalid TOML"),
    ],
)
def test_config_errors_exit_2_and_name_the_problem(cli, tmp_path, table, message):
    write_project(tmp_path, table, {"mod.py": HAZARD})
    result = cli("check", str(tmp_path))
    assert result.code == 2
    assert message in result.err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"tool = 1\n[project]\n# tool.dtype-lint\n", None),  # no table: the defaults
        (b"project = 1\n[tool.dtype-lint]\n", None),
        (b"[tool.dtype-lint]\nselect = ['DTL\xff']\n", "not UTF-8"),
        (b"[tool.dtype-lint]\nx = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
        (b"[tool.dtype-lint]\nsrc = ['" + b"s" * 70_000 + b"']\n", "over the 65536 it takes"),
    ],
)
def test_a_hostile_pyproject_is_an_error_that_names_it_or_no_table(cli, tmp_path, text, message):
    (tmp_path / "pyproject.toml").write_bytes(text)
    (tmp_path / "mod.py").write_text(HAZARD)
    result = cli("check", str(tmp_path))
    assert (result.code, message is None or message in result.err) == (1 if message is None else 2, True), result.err
    assert len(result.err) < 500
