"""The CLI says what ruff says in the same situation: each case runs the real ruff on an
equivalent file and compares the shape of its sentence with ours (our noun is
"finding" where ruff's is "error"; ruff quotes flags in backticks, our summaries do not)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

HAZARD = "import torch\ndef f(x, dtype=torch.float32):\n    return x\n"  # DTL101, unsafe fix only
ALIAS = "import jax\ny = jax.tree_map(f, x)\n"  # DTL304 (opt-in), safe fix
NO_FIX = "import torch\nx = m.get(k, torch.float32)\n"  # DTL102, no fix
# The same situations for ruff: E731's fix is unsafe, F401's safe, F821 has none.
RUFF_UNSAFE = "f = lambda x: x\n"
RUFF_SAFE = "import os\n"
RUFF_NO_FIX = "x = y\n"


def ruff(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated",
                           "--select", "E731,F401,F821", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def shape(line: str) -> str:
    """A sentence with its numbers, nouns and quoting made comparable."""
    line = line.replace("`", "").replace("errors", "findings").replace("error", "finding")
    return re.sub(r"\d+", "N", line)


@pytest.fixture
def files(tmp_path):
    for name, text in (("unsafe.py", HAZARD), ("safe.py", ALIAS), ("no_fix.py", NO_FIX),
                       ("r_unsafe.py", RUFF_UNSAFE), ("r_safe.py", RUFF_SAFE), ("r_no_fix.py", RUFF_NO_FIX)):
        (tmp_path / name).write_text(text)
    return tmp_path


def test_diff_with_only_unsafe_fixes_says_none_would_be_fixed_and_exits_0(cli, files):
    ours = cli("check", "--no-cache", "--fix", "--diff", str(files / "unsafe.py"))
    theirs = ruff("--fix", "--diff", "r_unsafe.py", cwd=files)
    assert ours.out == "No findings would be fixed (1 fix available with --unsafe-fixes).\n"
    assert shape(ours.out) == shape(theirs.stdout)
    assert ours.code == theirs.returncode == 0


@pytest.mark.parametrize("count", [1, 2])
def test_diff_with_unsafe_fixes_only_counts_them_in_plural_as_ruff(cli, files, count):
    (files / "unsafe.py").write_text(HAZARD + "def g(x, dtype=torch.float32):\n    return x\n" * (count - 1))
    (files / "r_unsafe.py").write_text(RUFF_UNSAFE + "g = lambda y: y\n" * (count - 1))
    ours = cli("check", "--no-cache", "--diff", str(files / "unsafe.py")).out
    theirs = ruff("--diff", "r_unsafe.py", cwd=files).stdout
    assert ours == f"No findings would be fixed ({count} {'fix' if count == 1 else 'fixes'} available with --unsafe-fixes).\n"
    assert shape(ours) == shape(theirs)


def test_diff_ends_with_would_fix_and_the_unsafe_fixes_left_out(cli, files):
    ours = cli("check", "--no-cache", "--diff", "--extend-select", "DTL304", str(files / "unsafe.py"), str(files / "safe.py"))
    theirs = ruff("--diff", "r_unsafe.py", "r_safe.py", cwd=files)
    assert ours.out.startswith("--- a/")
    assert ours.out.splitlines()[-1] == "Would fix 1 finding (1 additional fix available with --unsafe-fixes)."
    assert shape(ours.out.splitlines()[-1]) == shape(theirs.stdout.splitlines()[-1])
    assert ours.code == theirs.returncode == 1


@pytest.mark.parametrize("count", [1, 2])
def test_diff_would_fix_counts_every_fix_with_unsafe_fixes(cli, files, count):
    (files / "r_safe.py").write_text("import os\nimport sys\n" if count == 2 else "import os\n")
    ours = cli("check", "--no-cache", "--diff", "--unsafe-fixes", str(files / "unsafe.py"),
               *([str(files / "safe.py"), "--extend-select", "DTL304"] if count == 2 else []))
    theirs = ruff("--diff", "r_safe.py", cwd=files)
    assert ours.out.splitlines()[-1] == f"Would fix {count} finding{'' if count == 1 else 's'}."
    assert shape(ours.out.splitlines()[-1]) == shape(theirs.stdout.splitlines()[-1])


def test_diff_without_fixes_prints_nothing_as_ruff(cli, files):
    ours = cli("check", "--no-cache", "--diff", str(files / "no_fix.py"))
    theirs = ruff("--diff", "r_no_fix.py", cwd=files)
    assert ours.out == theirs.stdout == ""
    assert ours.code == theirs.returncode == 0


def test_diff_summary_is_left_out_with_quiet(cli, files):
    assert cli("check", "--no-cache", "--diff", "-q", str(files / "unsafe.py")).out == ""


def test_statistics_marks_unsafe_only_fixes_as_ruff(cli, files):
    ours = cli("check", "--no-cache", "--statistics", "-q", "--extend-select", "DTL304",
               *(str(files / n) for n in ("unsafe.py", "safe.py", "no_fix.py"))).out
    theirs = ruff("--statistics", "r_unsafe.py", "r_safe.py", "r_no_fix.py", cwd=files).stdout
    marks = {line.split()[1]: " ".join(line.split()[2:-1]) for line in ours.splitlines()}
    ruff_marks = {line.split()[1]: " ".join(line.split()[2:-1]) for line in theirs.splitlines() if "\t" in line}
    assert marks == {"DTL101": "[ ]", "DTL304": "[*]", "DTL102": "[ ]"}
    assert (marks["DTL101"], marks["DTL304"], marks["DTL102"]) == (
        ruff_marks["E731"], ruff_marks["F401"], ruff_marks["F821"])


def test_statistics_without_a_safe_fix_has_no_marks_as_ruff(cli, files):
    ours = cli("check", "--no-cache", "--statistics", "-q", str(files / "unsafe.py"), str(files / "no_fix.py")).out
    theirs = ruff("--statistics", "r_unsafe.py", "r_no_fix.py", cwd=files).stdout
    assert [len(line.split()) for line in ours.splitlines()] == [3, 3]
    assert [len(line.split()) for line in theirs.splitlines() if "\t" in line] == [3, 3]


def test_syntax_error_is_placed_where_ruff_and_cpython_place_it(cli, files):
    (files / "bad.py").write_text("def f(:\n")
    ours = cli("check", "--no-cache", "bad.py", cwd=files)
    theirs = ruff("--select", "E", "--output-format", "concise", "bad.py", cwd=files).stdout
    with pytest.raises(SyntaxError) as cpython:
        compile("def f(:\n", "bad.py", "exec")
    assert ours.err == "bad.py:1:7: error: syntax error: invalid syntax\n"
    assert theirs.startswith("bad.py:1:7: ")
    assert (cpython.value.lineno, cpython.value.offset) == (1, 7)
    assert ours.code == 2


def test_no_python_files_warns_as_ruff_and_keeps_the_exit_code(cli, files):
    (files / "empty").mkdir()
    ours = cli("check", "--no-cache", str(files / "empty"))
    theirs = ruff(str(files / "empty"), cwd=files)
    assert ours.err == "dtype-lint: warning: No Python files found under the given path(s)\n"
    assert ours.err.removeprefix("dtype-lint: ") == theirs.stderr.strip() + "\n"
    assert ours.out == "All checks passed!\n"
    assert ours.code == theirs.returncode == 0
    assert cli("check", "--no-cache", "--silent", str(files / "empty")).err == ""
