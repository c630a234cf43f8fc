"""The mypy plugin, through real mypy runs (``mypy.api.run``, in a child process) on the
fixtures in data/.

Each fixture line that must be reported ends with `# expect: DTL303` (several codes
comma-separated); every other line must stay silent.

Speed: analysing torch, jax and flax is what costs (about a minute of CPU). It happens
once: the session run checks every fixture and the incremental test's files together,
in plain mode (``--no-incremental``, which still writes the cache), into one cache
directory shared by the session; the later runs (incremental edits, the no-hook
fallback) check only their own files and take torch from that cache. Runs that change
an option affecting the cache (``--disable-error-code``) or that must not leave notes
in it (the crash test) use files without torch and caches of their own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy.api")

from dtype_lint.frontends.mypy.lint import HELPER_REASON  # noqa: E402
from dtype_lint.frontends.mypy.plugin import TEST_CRASH_VARIABLE  # noqa: E402

DATA = Path(__file__).parent / "data"
CONFIG = DATA / "mypy.ini"
FIXTURES = ("dtl303_types.py", "dtl2_pickling.py", "engine_rules.py", "ignores.py", "dtl101_fields.py",
            "no_torch.py")
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DTL\d+(?:\s*,\s*DTL\d+)*)")
# path:line[:column]: severity: message  [code]
MESSAGE = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+)(?::(?P<column>\d+))?: (?P<severity>\w+): (?P<message>.*?)"
                     r"(?:  \[(?P<code>[\w-]+)\])?$")

Error = tuple[str, int, int, str]  # path, line, column, code

# -- the incremental test's package: version 1, and the edits ----------------------------

MODELS_V1 = '''\
"""Models, imported by user.py: in incremental runs they come from the cache."""
from __future__ import annotations

import torch.nn as nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(2, 2)


def make() -> Net:
    return Net()
'''

# The edit of models.py: Net casts its own way, so user.py's `net.half()` is no hazard.
MODELS_V2 = MODELS_V1.replace('''        self.proj = nn.Linear(2, 2)
''', '''        self.proj = nn.Linear(2, 2)

    def half(self) -> Net:
        return self
''')

USER_V1 = '''\
from __future__ import annotations

import torch

from .models import Net, make


def run(net: Net, x: torch.Tensor) -> None:
    net.half()  # expect: DTL303
    make().proj.to(torch.float16)  # expect: DTL303
    x.half()
'''

# The edit of user.py: lines shifted, one hazard removed, two added (one type-aware, one
# from the engine).
USER_V2 = '''\
"""Edited."""
from __future__ import annotations

import torch

from .models import Net, make


def run(net: Net, x: torch.Tensor) -> None:
    net.half()  # expect: DTL303
    make().bfloat16()  # expect: DTL303
    x.half()


def scale(x: int, dtype: torch.dtype = torch.float32) -> int:  # expect: DTL101
    return x
'''

NOHOOK_V1 = "import torch\n"
# No call the plugin hooks: the plugin finds mypy's error list through the build state.
NOHOOK_V2 = '''\
import torch


def f(x: int, dtype: torch.dtype = torch.float32) -> int:  # expect: DTL101
    return x
'''


# -- helpers ---------------------------------------------------------------------------

# mypy.api.run in a child process that exits at once, as mypy's command line does:
# tearing down the objects of a run that analysed torch takes half a minute.
API_RUN = """
import os, sys
from mypy import api
stdout, stderr, status = api.run(sys.argv[1:])
sys.stdout.write(stdout)
sys.stderr.write(stderr)
sys.stdout.flush()
sys.stderr.flush()
os._exit(status)
"""


def api_run(*args: str, cache: Path, env: dict[str, str] | None = None) -> tuple[str, str, int]:
    result = subprocess.run([sys.executable, "-c", API_RUN, "--config-file", str(CONFIG), "--cache-dir", str(cache),
                             "--no-error-summary", *args],
                            capture_output=True, text=True, timeout=900, env={**os.environ, **(env or {})})
    return result.stdout, result.stderr, result.returncode


def run_mypy(*args: str, cache: Path) -> str:
    stdout, stderr, status = api_run(*args, cache=cache)
    assert "Traceback" not in stdout + stderr and "INTERNAL ERROR" not in stdout + stderr, stdout + stderr
    assert status in (0, 1), stdout + stderr
    return stdout


def dtl_errors(stdout: str, path: Path | None = None) -> set[Error]:
    found = set()
    for line in stdout.splitlines():
        match = MESSAGE.match(line)
        if match and (match["code"] or "").startswith("DTL"):
            where = Path(match["path"]).resolve()
            if path is None or where == path.resolve():
                found.add((str(where), int(match["line"]), int(match["column"]), match["code"]))
    return found


def positions(errors: set[Error]) -> set[tuple[int, int, str]]:
    return {(line, column, code) for _, line, column, code in errors}


def expected(text: str) -> set[tuple[int, str]]:
    found = set()
    for number, line in enumerate(text.splitlines(), 1):
        match = EXPECT.search(line)
        if match:
            found |= {(number, code.strip()) for code in match["codes"].split(",")}
    return found


def lines_and_codes(errors: set[Error]) -> set[tuple[int, str]]:
    return {(line, code) for _, line, _, code in errors}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# -- the session run -------------------------------------------------------------------

@pytest.fixture(scope="session")
def cache(mypy_cache: Path) -> Path:
    return mypy_cache


@pytest.fixture(scope="session")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The incremental test's files: package a (edited later, first version) and package
    b (the final version, for the plain run to compare with)."""
    root = tmp_path_factory.mktemp("work")
    for package, models, user in (("inc/pkg_a", MODELS_V1, USER_V1), ("plain/pkg_b", MODELS_V2, USER_V2)):
        write(root / package / "__init__.py", "")
        write(root / package / "models.py", models)
        write(root / package / "user.py", user)
    write(root / "nohook" / "nohook.py", NOHOOK_V1)
    return root


def work_files(work: Path) -> list[Path]:
    return [work / p for p in ("inc/pkg_a/models.py", "inc/pkg_a/user.py", "plain/pkg_b/models.py",
                               "plain/pkg_b/user.py", "nohook/nohook.py")]


@pytest.fixture(scope="session")
def session_run(cache: Path, work: Path) -> str:
    """Every fixture and work file in one plain (non-incremental) run, writing the cache."""
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    pytest.importorskip("flax")
    files = [DATA / name for name in FIXTURES] + work_files(work)
    return run_mypy("--no-incremental", *map(str, files), cache=cache)


@pytest.fixture(scope="session")
def cli_findings() -> list[dict]:
    result = subprocess.run([sys.executable, "-m", "dtype_lint", "check", "--output-format", "json",
                             *(str(DATA / name) for name in FIXTURES)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


# -- tests -----------------------------------------------------------------------------

@pytest.mark.parametrize("fixture", FIXTURES)
def test_fixture_reports_exactly_the_expected_lines(session_run: str, fixture: str) -> None:
    path = DATA / fixture
    reported = lines_and_codes(dtl_errors(session_run, path))
    assert reported == expected(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("fixture", FIXTURES)
def test_lines_and_columns_equal_the_cli(session_run: str, cli_findings: list[dict], fixture: str) -> None:
    """Every CLI finding the plugin takes from the engine is reported at the CLI's line and
    column; a type-aware finding on a line the CLI also reports has the CLI's column."""
    path = DATA / fixture
    source = path.read_text(encoding="utf-8").splitlines()
    reported = positions(dtl_errors(session_run, path))
    cli = set()
    for f in cli_findings:
        if Path(f["path"]).resolve() != path.resolve():
            continue
        if f["code"] == "DTL303" and HELPER_REASON not in f["message"]:
            continue  # cast methods: the plugin decides by type, not by name
        if f"ignore[{f['code']}]" in source[f["line"] - 1]:
            continue  # silenced for mypy by `# type: ignore[code]`
        cli.add((f["line"], f["column"], f["code"]))
    assert cli <= reported
    by_line = {(line, code): column for line, column, code in reported}
    for f in cli_findings:
        if Path(f["path"]).resolve() == path.resolve() and (f["line"], f["code"]) in by_line:
            assert by_line[f["line"], f["code"]] == f["column"], f


def test_engine_rules_match_the_cli_exactly(session_run: str, cli_findings: list[dict]) -> None:
    path = DATA / "engine_rules.py"
    cli = {(f["line"], f["column"], f["code"]) for f in cli_findings if Path(f["path"]).resolve() == path.resolve()}
    assert cli and positions(dtl_errors(session_run, path)) == cli
    # The non-ASCII line: mypy counts bytes, the CLI characters; the plugin prints characters.
    assert (27, 40, "DTL101") in cli


def test_type_aware_dtl303_columns(session_run: str) -> None:
    reported = positions(dtl_errors(session_run, DATA / "dtl303_types.py"))
    assert (14, 9, "DTL303") in reported  # `self.half()` in a method
    assert (27, 5, "DTL303") in reported  # `build().half()`


def test_type_ignore_silences_only_that_code(session_run: str) -> None:
    path = DATA / "ignores.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    both = next(n for n, line in enumerate(lines, 1) if "build().half()" in line)
    reported = lines_and_codes(dtl_errors(session_run, path))
    assert (both, "DTL101") in reported and (both, "DTL303") not in reported
    assert not any(code == "DTL303" for _, code in reported)
    # ignores.py turns on warn-unused-ignores: the comments that silenced a finding are
    # used, the one on a line with nothing to silence is not.
    unused = {int(m["line"]) for m in map(MESSAGE.match, session_run.splitlines())
              if m and Path(m["path"]).resolve() == path.resolve() and "unused" in m["message"].lower()}
    assert unused == {next(n for n, line in enumerate(lines, 1) if '.to("cuda")' in line)}


def test_one_error_code_per_rule() -> None:
    from dtype_lint.frontends.mypy.plugin import ERROR_CODES
    from dtype_lint.rules.registry import RULES

    assert set(ERROR_CODES) == {rule.doc.code for rule in RULES}


def test_plugin_import_does_not_import_libcst() -> None:
    # A warm mypy run that rechecks no file of the user's pays nothing for LibCST.
    code = "import sys, dtype_lint.mypy_plugin; sys.exit('libcst' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


def test_disable_error_code(tmp_path: Path) -> None:
    # Own caches: a changed error-code option makes mypy recheck everything.
    path = DATA / "no_torch.py"
    stdout = run_mypy(str(path), cache=tmp_path / "a")
    assert {code for *_, code in dtl_errors(stdout)} == {"DTL201"}
    stdout = run_mypy("--disable-error-code", "DTL201", str(path), cache=tmp_path / "b")
    assert dtl_errors(stdout) == set()


def test_incremental_runs_report_like_plain_runs(session_run: str, cache: Path, work: Path) -> None:
    models, user = work / "inc/pkg_a/models.py", work / "inc/pkg_a/user.py"
    plain_user = work / "plain/pkg_b/user.py"
    files = (str(models), str(user))

    def run() -> set[Error]:
        return dtl_errors(run_mypy(*files, cache=cache))

    # Nothing changed: mypy replays the cached errors of the plain run.
    plain_v1 = dtl_errors(session_run, user) | dtl_errors(session_run, models)
    assert lines_and_codes(plain_v1) == expected(USER_V1)
    assert run() == plain_v1
    # user.py edited: rechecked, models.py from the cache.
    write(user, USER_V2)
    after_user_edit = run()
    assert lines_and_codes(after_user_edit) == expected(USER_V2)
    assert run() == after_user_edit  # and replayed
    # models.py edited: user.py is rechecked because its dependency changed.
    write(models, MODELS_V2)
    after_models_edit = run()
    net_half = next(n for n, line in enumerate(USER_V2.splitlines(), 1) if "net.half()" in line)
    assert lines_and_codes(after_models_edit) == expected(USER_V2) - {(net_half, "DTL303")}
    # The same as the plain run of the same code (package b).
    assert positions(after_models_edit) == positions(dtl_errors(session_run, plain_user))
    assert run() == after_models_edit


def test_file_without_hooked_calls_in_a_warm_run(session_run: str, cache: Path, work: Path) -> None:
    # Only this file is rechecked and no hook fires: the engine's finding still comes out.
    path = work / "nohook" / "nohook.py"
    assert dtl_errors(session_run, path) == set()
    write(path, NOHOOK_V2)
    assert lines_and_codes(dtl_errors(run_mypy(str(path), cache=cache))) == expected(NOHOOK_V2)


def test_internal_error_becomes_one_note(tmp_path: Path) -> None:
    # The plugin's test switch makes every hook raise. Two files whose hooks raise, one of
    # them with a genuine type error: one note, no traceback, mypy's own error reported.
    second = tmp_path / "second.py"
    second.write_text((DATA / "no_torch.py").read_text(encoding="utf-8") + "\nx: int = 'no'\n", encoding="utf-8")
    stdout, stderr, status = api_run(str(DATA / "no_torch.py"), str(second), cache=tmp_path / "cache",
                                     env={TEST_CRASH_VARIABLE: "1"})
    output = stdout + stderr
    assert "Traceback" not in output and "INTERNAL ERROR" not in output
    notes = [line for line in output.splitlines() if "internal error" in line]
    assert len(notes) == 1, output
    assert "RuntimeError: deliberate crash" in notes[0] and ": note: " in notes[0]
    assert "[assignment]" in output and dtl_errors(output) == set()
    assert status == 1


def test_lint_worker_returns_the_engine_findings() -> None:
    from dtype_lint.frontends.mypy.lint import engine_findings, read
    from dtype_lint.frontends.mypy.worker import LintWorker

    worker = LintWorker()
    paths = [str(DATA / "engine_rules.py"), str(DATA / "no_torch.py")]
    try:
        for path in paths:
            worker.submit(path)
        for path in reversed(paths):  # collected in any order
            got = worker.collect(path)
            assert got is not None
            assert got == engine_findings(path, read(path) or "")
        assert worker.collect(paths[0]) is None  # collected once
        assert engine_findings(paths[0], read(paths[0]) or "")  # a file with findings was compared
        assert worker.collect(str(DATA / "ignores.py")) is None  # never submitted
    finally:
        worker.close()


def test_lint_worker_gone_means_lint_in_process() -> None:
    from dtype_lint.frontends.mypy.worker import LintWorker

    worker = LintWorker()
    worker.submit(str(DATA / "no_torch.py"))
    worker.collect(str(DATA / "no_torch.py"))
    worker.close()  # the worker is killed: what is submitted next is not answered
    path = str(DATA / "engine_rules.py")
    worker.submit(path)
    assert worker.collect(path) is None


def test_worker_and_in_process_report_alike(session_run: str, cache: Path, work: Path) -> None:
    # Fresh copies, checked against the session's cache (torch comes from it), once with
    # the worker and once in mypy's own process.
    source = (DATA / "engine_rules.py").read_text(encoding="utf-8")
    found = []
    for name, env in (("via_worker", {}), ("in_process", {"DTYPE_LINT_MYPY_WORKER": "0"})):
        path = work / f"{name}.py"
        write(path, source)
        stdout, stderr, _ = api_run(str(path), cache=cache, env=env)
        assert "Traceback" not in stdout + stderr
        found.append({(line, column, code) for _, line, column, code in dtl_errors(stdout, path)})
    assert found[0] == found[1] != set()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_worker_only_with_a_second_core(monkeypatch: pytest.MonkeyPatch) -> None:
    from dtype_lint.frontends.mypy.plugin import WORKER_VARIABLE, _worker_pays

    cores = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(cores)})
        assert not _worker_pays()  # one core: the worker would only add its start-up
        if len(cores) > 1:
            os.sched_setaffinity(0, cores)
            assert _worker_pays()
            monkeypatch.setenv(WORKER_VARIABLE, "0")
            assert not _worker_pays()
    finally:
        os.sched_setaffinity(0, cores)


def test_an_older_mypy_is_refused_by_name_not_run_silently() -> None:
    # mypy turns an ImportError from a plugin into "Error importing plugin ...: <message>".
    code = "import mypy.version as v\nv.__version__ = '2.3.1'\nimport dtype_lint.mypy_plugin\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "ImportError: dtype-lint's mypy plugin needs mypy >= 2.4, and this is mypy 2.3.1" in result.stderr


def test_min_confidence_from_the_configuration(tmp_path: Path) -> None:
    # mypy has no options of a plugin's own: the plugin reads `min-confidence` from the
    # project's [tool.dtype-lint] table, as every front-end does. `setting or float32`
    # is a low finding (DTL102), `.get(key, float32)` a high one.
    source = ("import numpy as np\n\n\ndef pick(setting):\n    return setting or np.float32\n\n\n"
              "def lookup(table, key):\n    return table.get(key, np.float32)\n")
    found = {}
    for level in ("low", "medium"):
        folder = tmp_path / level
        folder.mkdir()
        (folder / "pyproject.toml").write_text(f'[tool.dtype-lint]\nmin-confidence = "{level}"\n')
        (folder / "mod.py").write_text(source)
        found[level] = {(line, code) for _, line, _, code in
                        dtl_errors(run_mypy(str(folder / "mod.py"), cache=tmp_path / f"cache-{level}"))}
    assert found["low"] == {(5, "DTL102"), (9, "DTL102")}
    assert found["medium"] == {(9, "DTL102")}
