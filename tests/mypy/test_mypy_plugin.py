"""The mypy plugin, through real mypy runs on the fixtures in data/.

Each fixture line that must be reported ends with `# expect: DTL303` (several codes
comma-separated); every other line must stay silent. mypy checks torch once per session:
all runs share one cache directory, and the fixtures are checked together in one run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

DATA = Path(__file__).parent / "data"
CONFIG = DATA / "mypy.ini"
TORCH_FIXTURES = ("dtl303_types.py", "dtl2_pickling.py", "engine_rules.py", "ignores.py")
FLAX_FIXTURES = ("dtl101_fields.py",)
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DTL\d+(?:\s*,\s*DTL\d+)*)")
# path:line:column: severity: message  [code]
MESSAGE = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?P<column>\d+): (?P<severity>\w+): (?P<message>.*?)"
                     r"(?:  \[(?P<code>[\w-]+)\])?$")


def run_mypy(*args: str, cache: Path) -> tuple[str, int]:
    stdout, stderr, status = api.run(["--config-file", str(CONFIG), "--cache-dir", str(cache),
                                      "--no-error-summary", *args])
    assert "Traceback" not in stdout + stderr, stdout + stderr
    return stdout, status


def dtl_errors(stdout: str) -> set[tuple[str, int, int, str]]:
    found = set()
    for line in stdout.splitlines():
        match = MESSAGE.match(line)
        if match and (match["code"] or "").startswith("DTL"):
            found.add((Path(match["path"]).name, int(match["line"]), int(match["column"]), match["code"]))
    return found


def expected(path: Path) -> set[tuple[str, int, str]]:
    found = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = EXPECT.search(line)
        if match:
            found |= {(path.name, number, code.strip()) for code in match["codes"].split(",")}
    return found


def without_column(errors: set[tuple[str, int, int, str]]) -> set[tuple[str, int, str]]:
    return {(name, line, code) for name, line, _, code in errors}


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy-cache")


@pytest.fixture(scope="session")
def torch_run(cache: Path) -> str:
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    pytest.importorskip("flax")
    stdout, _ = run_mypy(*(str(DATA / name) for name in TORCH_FIXTURES + FLAX_FIXTURES), cache=cache)
    return stdout


@pytest.mark.parametrize("fixture", TORCH_FIXTURES + FLAX_FIXTURES)
def test_fixture_reports_exactly_the_expected_lines(torch_run: str, fixture: str) -> None:
    reported = {e for e in without_column(dtl_errors(torch_run)) if e[0] == fixture}
    assert reported == expected(DATA / fixture)


def test_columns_and_lines_equal_the_cli(torch_run: str) -> None:
    from dtype_lint.config import Config
    from dtype_lint.engine import lint_source

    config = Config()
    path = DATA / "engine_rules.py"
    cli = {(path.name, f.line, f.column, f.code)
           for f in lint_source(path.read_text(encoding="utf-8"), str(path), config.rules(), config.options)}
    reported = {e for e in dtl_errors(torch_run) if e[0] == path.name}
    assert cli and reported == cli
    # The non-ASCII line: mypy counts bytes, the CLI characters; the plugin prints characters.
    assert ("engine_rules.py", 27, 40, "DTL101") in reported


def test_type_aware_dtl303_columns(torch_run: str) -> None:
    reported = dtl_errors(torch_run)
    assert ("dtl303_types.py", 14, 9, "DTL303") in reported  # `self.half()` in a method
    assert ("dtl303_types.py", 27, 5, "DTL303") in reported  # `build().half()`


def test_type_ignore_silences_only_that_code(torch_run: str, cache: Path) -> None:
    reported = without_column(dtl_errors(torch_run))
    assert ("ignores.py", 12, "DTL101") in reported
    assert ("ignores.py", 12, "DTL303") not in reported
    assert ("ignores.py", 16, "DTL303") not in reported
    # The ignore comments were used: mypy does not call them unused.
    stdout, _ = run_mypy("--warn-unused-ignores", str(DATA / "ignores.py"), cache=cache)
    assert "unused" not in stdout


def test_disable_error_code(tmp_path: Path) -> None:
    path = str(DATA / "no_torch.py")
    stdout, _ = run_mypy(path, cache=tmp_path)
    assert {code for *_, code in dtl_errors(stdout)} == {"DTL201"}
    stdout, _ = run_mypy("--disable-error-code", "DTL201", path, cache=tmp_path)
    assert dtl_errors(stdout) == set()


def test_incremental_run_reports_like_a_plain_run(cache: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    work = tmp_path / "pkg"
    work.mkdir()
    target = work / "edited.py"
    shutil.copy(DATA / "dtl303_types.py", target)
    first, _ = run_mypy(str(target), cache=cache)
    again, _ = run_mypy(str(target), cache=cache)  # cache hit: mypy replays the errors
    assert dtl_errors(first) == dtl_errors(again) and len(dtl_errors(first)) == 10
    # Edit: one hazard removed, one added, lines shifted.
    text = target.read_text(encoding="utf-8")
    text = text.replace("    build().half()  # expect: DTL303\n", "")
    text += "\n\ndef added(m: nn.Linear) -> None:\n    m.bfloat16()\n"
    target.write_text(text, encoding="utf-8")
    incremental, _ = run_mypy(str(target), cache=cache)
    plain, _ = run_mypy("--no-incremental", str(target), cache=tmp_path / "unused")
    assert dtl_errors(incremental) == dtl_errors(plain)
    assert len(dtl_errors(plain)) == 10
    assert ("edited.py", len(text.splitlines()), 5, "DTL303") in dtl_errors(plain)


CRASH = """
import sys
from mypy import api
from dtype_lint.rules.dtl201_unpicklable_process_target import UnpicklableProcessTarget

def boom(self, node):
    raise RuntimeError("deliberately broken rule")

UnpicklableProcessTarget.visit_Call = boom
out, err, status = api.run(sys.argv[1:])
sys.stdout.write(out + err)
sys.exit(status)
"""


def test_internal_error_becomes_one_note(tmp_path: Path) -> None:
    # Two files that both trip the broken rule: still one note, and no traceback.
    second = tmp_path / "second.py"
    shutil.copy(DATA / "no_torch.py", second)
    result = subprocess.run(
        [sys.executable, "-c", CRASH, "--config-file", str(CONFIG), "--cache-dir", str(tmp_path / "cache"),
         str(DATA / "no_torch.py"), str(second)],
        capture_output=True, text=True, timeout=300,
    )
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "INTERNAL ERROR" not in output
    notes = [line for line in output.splitlines() if "internal error" in line]
    assert len(notes) == 1, output
    assert "RuntimeError: deliberately broken rule" in notes[0] and ": note:" in notes[0]
    assert result.returncode in (0, 1)
