"""Jupyter notebooks: linted cell by cell as one module, reported by cell, fixed in place."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, notebook_expectations, notebook_fixtures
from dtype_lint.project.notebooks import CELL_SEPARATOR

nbformat = pytest.importorskip("nbformat")
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402


def _write(path: Path, cells: list, indent: int = 1) -> Path:
    notebook = new_notebook(cells=cells)
    for count, cell in enumerate((c for c in notebook.cells if c.cell_type == "code"), start=1):
        cell.execution_count = count
    # nbformat writes an indent of 1 whatever it is asked; other tools write 2.
    text = nbformat.writes(notebook) if indent == 1 else json.dumps(json.loads(nbformat.writes(notebook)), indent=indent)
    path.write_text(text + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("path", notebook_fixtures(), ids=lambda p: p.name)
def test_notebook_fixtures_report_exactly_their_expectations(cli, path):
    result = cli("check", str(path), "--output-format", "json", "--no-cache")
    assert {(f["cell"], f["line"], f["code"]) for f in result.json()} == notebook_expectations(path)
    assert result.code == 1 and result.err == ""


def test_every_notebook_fixture_has_expectations_and_look_alikes():
    assert len(notebook_fixtures()) >= 4
    for path in notebook_fixtures():
        assert notebook_expectations(path), path.name
        assert "Valid look-alikes" in path.read_text(encoding="utf-8"), path.name


def test_text_names_the_cell_and_a_folder_run_includes_notebooks(cli):
    result = cli("check", str(FIXTURES), "--no-cache")
    lines = result.out.splitlines()
    assert f"{FIXTURES / 'nb_pickling.ipynb'}:cell 4:1:" in "\n".join(lines)
    assert any(line.startswith(f"{FIXTURES / 'nb_magics.ipynb'}:cell 6:3:20: DTL101 ") for line in lines), lines
    reported = {line.split(":cell")[0] for line in lines if ".ipynb:cell" in line}
    assert reported == {str(p) for p in notebook_fixtures()}


def test_a_hazard_that_spans_two_cells_is_found_where_the_value_is_used(cli):
    # The lambda is bound in cell 3 and reaches DataLoader(num_workers=2) in cell 4.
    result = cli("check", str(FIXTURES / "nb_pickling.ipynb"), "--output-format", "json", "--no-cache")
    assert (4, 1, "DTL202") in {(f["cell"], f["line"], f["code"]) for f in result.json()}


def test_sarif_and_github_carry_the_cell_and_the_line_within_it(cli):
    path = str(FIXTURES / "nb_recast.ipynb")
    sarif = cli("check", path, "--output-format", "sarif", "--no-cache").json()
    [half] = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "DTL303"]
    assert half["properties"]["cell"] == 3 and half["properties"]["confidence"] in ("low", "medium", "high")
    assert half["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    github = cli("check", path, "--output-format", "github", "--no-cache").out
    assert f"file={path},line=2,col=1," in github and "::cell 3: DTL303 " in github


def test_statistics_exit_zero_and_the_cache_as_for_python_files(cli, tmp_path):
    shutil.copy(FIXTURES / "nb_recast.ipynb", tmp_path)
    cache = str(tmp_path / "cache")
    stats = cli("check", str(tmp_path), "--statistics", "--cache-dir", cache)
    assert stats.code == 1 and "DTL303" in stats.out and "DTL301" in stats.out
    assert cli("check", str(tmp_path), "--exit-zero", "--cache-dir", cache).code == 0
    cold = cli("check", str(tmp_path), "--output-format", "json", "--cache-dir", cache).json()
    assert any(Path(cache).rglob("*.json"))
    warm = cli("check", str(tmp_path), "--output-format", "json", "--cache-dir", cache).json()
    assert warm == cold and {f["cell"] for f in warm} == {3, 5}


def test_include_and_exclude_choose_notebooks_like_any_file(cli, tmp_path):
    shutil.copy(FIXTURES / "nb_recast.ipynb", tmp_path)
    (tmp_path / "mod.py").write_text("import torch\nm = torch.nn.Linear(2, 2)\nm.half()\nopt = torch.optim.SGD(m.parameters())\n")
    paths = lambda run: {Path(f["path"]).name for f in run.json()}  # noqa: E731
    assert paths(cli("check", str(tmp_path), "--output-format", "json", "--no-cache")) == {"mod.py", "nb_recast.ipynb"}
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\ninclude = ["*.py"]\n')
    assert paths(cli("check", str(tmp_path), "--output-format", "json", "--no-cache")) == {"mod.py"}
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\nextend-exclude = ["*.ipynb"]\n')
    assert paths(cli("check", str(tmp_path), "--output-format", "json", "--no-cache")) == {"mod.py"}
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\ninclude = ["*.py"]\nextend-include = ["*.ipynb"]\n')
    assert paths(cli("check", str(tmp_path), "--output-format", "json", "--no-cache")) == {"mod.py", "nb_recast.ipynb"}


def test_cells_that_do_not_parse_are_reported_one_by_one_and_the_rest_is_linted(cli, tmp_path):
    path = _write(tmp_path / "broken.ipynb", [
        new_code_cell("import torch\nfrom torch.utils.data import DataLoader"),
        new_code_cell("def f(:\n    pass"),
        new_markdown_cell("text"),
        new_code_cell("x = (1,\ny = 2"),
        new_code_cell("loader = DataLoader(ds, num_workers=2, collate_fn=lambda b: b)"),
    ])
    result = cli("check", str(path), "--no-cache")
    assert result.code == 2
    assert f"{path}:cell 5:1:51: DTL202 " in result.out
    errors = result.err.splitlines()
    assert errors[0].startswith(f"{path}:cell 2:1:7: error: syntax error")
    assert errors[1].startswith(f"{path}:cell 4:1:") and len(errors) == 2
    assert "2 notebook cells could not be linted." in result.out


def test_a_file_that_is_not_a_notebook_is_an_error_and_others_are_still_linted(cli, tmp_path):
    (tmp_path / "bad.ipynb").write_text("{not json")
    shutil.copy(FIXTURES / "nb_recast.ipynb", tmp_path)
    result = cli("check", str(tmp_path), "--no-cache")
    assert result.code == 2 and "bad.ipynb: error: not a readable notebook" in result.err
    assert "nb_recast.ipynb:cell 3:2:1: DTL303" in result.out


def _edited_notebook(tmp_path: Path, indent: int) -> Path:
    cells = [
        new_markdown_cell("# Train"),
        new_code_cell("%matplotlib inline\nimport torch\nfrom torch.utils.data import DataLoader\n!nvidia-smi"),
        new_code_cell("def helper(x, dtype=torch.float32):\n    return x.to(dtype)"),
        new_code_cell("loader = DataLoader(ds, num_workers=4, collate_fn=lambda b: b)"),
        new_code_cell("%%time\nmodel = torch.nn.Linear(2, 2)\nmodel.half()\nopt = torch.optim.SGD(model.parameters())"),
    ]
    cells[3].outputs = [new_output("stream", text="hello\n")]
    cells[3].metadata = {"tags": ["keep-me"]}
    return _write(tmp_path / f"train_{indent}.ipynb", cells, indent=indent)


def _unchanged_except_sources(before: dict, after: dict, edited: set[int]) -> None:
    assert before["metadata"] == after["metadata"] and before["nbformat_minor"] == after["nbformat_minor"]
    assert len(before["cells"]) == len(after["cells"])
    for number, (old, new) in enumerate(zip(before["cells"], after["cells"]), start=1):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
        assert (old["source"] != new["source"]) == (number in edited), number


@pytest.mark.parametrize("indent", [1, 2])
def test_add_noqa_writes_only_the_edited_cells_and_keeps_the_files_layout(cli, tmp_path, indent):
    path = _edited_notebook(tmp_path, indent)
    before_text = path.read_text(encoding="utf-8")
    result = cli("check", str(path), "--add-noqa", "--no-cache")
    assert result.code == 0 and "Added 3 `# noqa` comments in 1 file." in result.out
    after_text = path.read_text(encoding="utf-8")
    _unchanged_except_sources(json.loads(before_text), json.loads(after_text), edited={3, 4, 5})
    nbformat.validate(nbformat.reads(after_text, as_version=4))
    # Only the three lines that took a comment differ: the JSON's indentation and final newline are kept.
    changed = [(a, b) for a, b in zip(before_text.splitlines(), after_text.splitlines()) if a != b]
    assert len(before_text.splitlines()) == len(after_text.splitlines()) and len(changed) == 3
    assert all(b.startswith(" " * (4 * indent) + "\"") and "# noqa: DTL" in b for _, b in changed)
    assert after_text.endswith("}\n")
    sources = [c.source for c in nbformat.reads(after_text, as_version=4).cells]
    assert sources[1].startswith("%matplotlib inline\n") and sources[1].endswith("!nvidia-smi")
    assert sources[4].startswith("%%time\n")
    assert cli("check", str(path), "--no-cache").code == 0


def test_fix_writes_the_notebook_back_valid_and_a_recheck_is_clean_of_what_it_fixed(cli, tmp_path):
    path = _edited_notebook(tmp_path, 1)
    before = json.loads(path.read_text(encoding="utf-8"))
    result = cli("check", str(path), "--fix", "--unsafe-fixes", "--no-cache", "--output-format", "json")
    remaining = {(f["cell"], f["code"]) for f in result.json()}
    assert remaining == {(4, "DTL202"), (5, "DTL303")}  # DTL101 was fixed; the others have no fix
    after = json.loads(path.read_text(encoding="utf-8"))
    _unchanged_except_sources(before, after, edited={3})
    assert "".join(after["cells"][2]["source"]).startswith("def helper(x, dtype=None")
    nbformat.validate(nbformat.from_dict(after))


def test_diff_writes_nothing(cli, tmp_path):
    path = _edited_notebook(tmp_path, 1)
    before = path.read_bytes()
    result = cli("check", str(path), "--diff", "--unsafe-fixes", "--no-cache")
    assert path.read_bytes() == before
    # One diff per changed cell, named as findings name cells, in the cell's own lines.
    assert f"--- a/{path}:cell 3\n+++ b/{path}:cell 3\n@@ -1,2 +1,2 @@\n" in result.out
    assert "+def helper(x, dtype=None" in result.out and CELL_SEPARATOR not in result.out


def test_flake8_through_nbqa_reports_what_the_cli_does(cli):
    """nbQA runs flake8 (and so this plugin) on each notebook as a script; it numbers
    code cells only (``cell_N``), where the CLI counts every cell, as ruff does."""
    import re
    import subprocess
    import sys

    pytest.importorskip("nbqa")
    paths = [FIXTURES / f"{name}.ipynb" for name in ("nb_float32", "nb_pickling", "nb_recast")]
    proc = subprocess.run([sys.executable, "-m", "nbqa", "flake8", *map(str, paths), "--select", "DTL"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    got = set()
    for line in proc.stdout.splitlines():
        path, code_cell, row, col, code = re.match(r"(.+?):cell_(\d+):(\d+):(\d+): (DTL\d+) ", line).groups()
        cells = nbformat.read(path, as_version=4).cells
        number = [n for n, c in enumerate(cells, start=1) if c.cell_type == "code"][int(code_cell) - 1]
        got.add((Path(path).name, number, int(row), int(col), code))
    expected = {(Path(f["path"]).name, f["cell"], f["line"], f["column"], f["code"])
                for f in cli("check", *map(str, paths), "--output-format", "json", "--no-cache").json()}
    assert got == expected and len(got) == 6


def test_a_notebook_heavy_with_outputs_is_linted_by_the_size_of_its_code(cli, tmp_path):
    plot = new_output("display_data", data={"image/png": "iVBORw0KGgo" * 600_000})  # ~6.6 MB of output
    cells = [new_code_cell("import torch\nm = torch.nn.Linear(2, 2)\nm.half()\nopt = torch.optim.SGD(m.parameters())")]
    cells[0].outputs = [plot]
    path = _write(tmp_path / "plots.ipynb", cells)
    assert path.stat().st_size > 4 * 2**20
    result = cli("check", str(path), "--no-cache")
    assert f"{path}:cell 1:3:1: DTL303" in result.out and result.err == ""


def test_the_broken_cells_fixture_reports_each_cell_where_it_says(cli):
    """`# expect-error: LINE:COL` marks a cell that does not parse; `# expect: CODE` a hazard."""
    import re

    path = FIXTURES / "broken" / "nb_broken_cells.ipynb"
    errors = set()
    for number, cell in enumerate(nbformat.read(path, as_version=4).cells, start=1):
        for line in cell.source.splitlines():
            if match := re.search(r"# expect-error: (\d+):(\d+)", line):
                errors.add(f"{path}:cell {number}:{match[1]}:{match[2]}")
    hazards = notebook_expectations(path)
    result = cli("check", str(path), "--output-format", "json", "--no-cache")
    assert result.code == 2
    assert {(f["cell"], f["line"], f["code"]) for f in result.json()} == hazards and len(hazards) == 2
    assert {line.split(": error: ")[0] for line in result.err.splitlines()} == errors and len(errors) == 2
    # A folder run of the fixtures leaves it out (fixtures/pyproject.toml), so that it shows hazards only.
    folder = cli("check", str(FIXTURES), "--output-format", "json", "--no-cache")
    assert folder.code == 1 and folder.err == "" and not any("broken" in f["path"] for f in folder.json())


def test_an_added_import_goes_into_the_first_linted_cell_and_the_result_type_checks(cli, tmp_path):
    path = _write(tmp_path / "typed.ipynb", [
        new_code_cell("%load_ext autoreload\nimport torch"),
        new_code_cell("def helper(x, dtype: torch.dtype = torch.float32):\n    return x.to(dtype)"),
    ])
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\ntarget-version = "py39"\n')
    result = cli("check", str(path), "--fix", "--unsafe-fixes", "--no-cache")
    assert result.code == 0, result.out + result.err
    cells = [c.source for c in nbformat.read(path, as_version=4).cells]
    assert cells[0] == "from typing import Optional\n\n%load_ext autoreload\nimport torch"  # the magic kept
    assert "dtype: Optional[torch.dtype] = None" in cells[1]


def _doc_command(path: Path, pattern: str) -> list[str]:
    import re
    import shlex

    match = re.search(pattern, path.read_text(encoding="utf-8"))
    assert match, f"{path.name} no longer shows {pattern}"
    return shlex.split(match.group(1))


def test_the_nbqa_commands_the_docs_show_run(tmp_path):
    """The README's nbQA line and the pre-commit hook's arguments in docs/notebooks.md
    (pre-commit puts the file names after the arguments), run as written."""
    import subprocess
    import sys

    pytest.importorskip("nbqa")
    notebook = tmp_path / "nb.ipynb"
    notebook.write_bytes((FIXTURES / "nb_float32.ipynb").read_bytes())
    readme = _doc_command(ROOT / "README.md", r"`(nbqa flake8 [^`]*)`")
    hook_args = _doc_command(ROOT / "docs" / "notebooks.md", r"id: nbqa-flake8\n\s*args: \[([^\]]*)\]")
    for command in ([*readme[:2], *(str(notebook) if a == "nb.ipynb" else a for a in readme[2:])],
                    ["nbqa", "flake8", *hook_args, str(notebook)]):
        proc = subprocess.run([sys.executable, "-m", *command], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1 and proc.stderr == "", (command, proc.stdout, proc.stderr)
        assert [line.split(": ")[1].split()[0] for line in proc.stdout.splitlines()] == ["DTL101", "DTL101"]
