"""A hostile repository, linted by every front-end: the CLI, flake8 and mypy (real runs,
each a subprocess) and the language server (a real LSP client, pytest-lsp, over stdio).

Each case builds a repository around ``zz_control.py``, a file with a known hazard, and
checks for each front-end that

* nothing of the repository's is executed (its scripts and ``.pth`` lines would write
  a ``MARKER`` file beside the repository);
* the front-end stays within BOUND_SECONDS and BOUND_BYTES of peak memory, measured in
  a process that runs only that front-end (``getrusage(RUSAGE_CHILDREN)``: the largest
  of it and its own children, worker processes included);
* the rest is linted (the control file's hazard is reported) and the message is clear.

Cases: (a) ``python`` names an executable, alone or as a virtual environment's
interpreter; (b) ``python`` outside the repository, and at a device; (c) a cache folder
that is a symbolic link, symbolic links inside it, and entries that do not parse;
(d) a notebook with 100 MiB of outputs; (e) a configuration with a 10 MB string, inside
and outside dtype-lint's table, and one nested 10,000 levels; (f) expressions nested
10,000 levels, and 2,900 (what CPython still accepts); (g) import cycles and
self-imports across the project model; (h) a FIFO and a link to ``/dev/zero`` among the
files a folder run finds.

flake8 and mypy never read dtype-lint's cache or notebooks (nbQA hands flake8 a
notebook's code; an editor sends the server cells without outputs): for them those
cases check that the rest is linted within the bounds. flake8's and mypy's own parsers
stop before any plugin on some deep files (flake8's crashes the run, mypy's syntax
errors end it): they are given the deep files they accept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("resource")  # the bounds are measured with getrusage (POSIX)

from conftest import run_process  # noqa: E402

BOUND_SECONDS = 60
BOUND_BYTES = 1536 * 1024 * 1024
FRONTENDS = ("cli", "flake8", "mypy", "server")
HAZARD = "import torch\n\n\ndef f(x, dtype=torch.float32):\n    return x\n"
CONTROL = ("zz_control.py", 4, "DTL101")
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
# A class whose module base comes from a package installed in the configured
# environment: DTL204 is reported only where that environment was read.
EXTLIB = "from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n"
HEAD = ("from extlib import Base\n\n\nclass Head(Base):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fn = lambda x: x\n")
HEAD_FINDING = ("model.py", 7, "DTL204")

# Runs a command and writes its wall time and its peak memory (its own or its
# children's, in bytes) to the file named first: a process of its own measures only it.
MEASURE = """
import resource, subprocess, sys, time
start = time.monotonic()
code = subprocess.run(sys.argv[2:]).returncode
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
with open(sys.argv[1], "w") as out:
    out.write(f"{time.monotonic() - start} {peak}")
sys.exit(code)
"""
# path:line[:column]: CODE ...  (the CLI, flake8) and path:line: error: ...  [CODE] (mypy)
FINDING = re.compile(r"^(?P<path>.+?):(?P<line>\d+)(?::\d+)?: (?:(?P<code>[A-Z]+\d+) |\w+: .*\[(?P<mypy>DTL\d+)\]$)")


@dataclasses.dataclass
class Seen:
    """What a front-end reported: findings as (path relative to the repository, line,
    code), and everything it said (output, warnings, the server's messages)."""

    findings: set[tuple[str, int, str]]
    text: str


@dataclasses.dataclass
class Expect:
    """A case's repository: what the front-ends lint and what they must say."""

    findings: tuple[tuple[str, int, str], ...] = ()
    messages: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # by front-end
    control: tuple[str, ...] = FRONTENDS  # the front-ends that lint the control file (not after a config error)
    files: tuple[str, ...] | None = None  # what mypy and the server are given (default: every .py file)
    runs: int = 1  # the front-end runs this often (a second run reads what the first wrote)
    after: Callable[[Seen], None] = lambda seen: None


def _config(repo: Path, table: str, before: str = "") -> None:
    (repo / "pyproject.toml").write_text(f"{before}[tool.dtype-lint]\n{table}\n", encoding="utf-8")


def _script(path: Path, marker: Path, answer: str = "[]") -> None:
    """An executable that leaves ``marker`` when run (and prints ``answer``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch '{marker}'\necho '{answer}'\n")
    path.chmod(0o755)


def _venv(prefix: Path, markers: Path) -> None:
    """A virtual environment that runs code wherever it is run: its interpreter is a
    script, and a .pth file holds an import line; its site-packages hold ``extlib``."""
    site = prefix / "lib" / f"python{VERSION}" / "site-packages"
    (site / "extlib").mkdir(parents=True)
    (site / "extlib" / "__init__.py").write_text(EXTLIB)
    (prefix / "pyvenv.cfg").write_text(f"home = /nowhere/bin\ninclude-system-site-packages = false\nversion = {VERSION}.0\n")
    _script(prefix / "bin" / "python", markers / "MARKER-interpreter")
    (site / "evil.pth").write_text(f"import os; open({str(markers / 'MARKER-pth')!r}, 'w').close()\nextlib\n")


def _package(repo: Path) -> tuple[str, int, str]:
    """A package whose class takes its module base from another file (summaries the
    project model reads, and caches); the DTL204 that proves it."""
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "base.py").write_text(EXTLIB)
    (repo / "pkg" / "head.py").write_text(HEAD.replace("from extlib", "from pkg.base"))
    return "pkg/head.py", 7, "DTL204"


# -- the cases -------------------------------------------------------------------------


def case_a_script(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, 'python = "./evil.sh"')
    _script(repo / "evil.sh", tmp / "MARKER-evil")
    said = ("evil.sh", "no Python environment there")
    return Expect(messages={"cli": said, "server": said})


def case_a_venv(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, 'python = ".venv/bin/python"')
    _venv(repo / ".venv", tmp)
    (repo / "model.py").write_text(HEAD)
    return Expect(findings=(HEAD_FINDING,))


def case_b_outside(repo: Path, tmp: Path, frontend: str) -> Expect:
    _venv(tmp / "outside" / "venv", tmp)
    _config(repo, f'python = "{tmp / "outside" / "venv" / "bin" / "python"}"')
    (repo / "model.py").write_text(HEAD)
    return Expect(findings=(HEAD_FINDING,))


def case_b_device(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, 'python = "/dev/zero"')
    said = ("/dev/zero", "neither a folder nor a file")
    return Expect(messages={"cli": said, "server": said})


def _elsewhere(tmp: Path) -> Path:
    (tmp / "elsewhere").mkdir()
    return tmp / "elsewhere"


def _nothing_in(folder: Path) -> Callable[[Seen], None]:
    def check(seen: Seen) -> None:
        assert not list(folder.iterdir()), f"written outside the cache folder: {list(folder.iterdir())}"
    return check


def case_c_linked_folder(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, "")
    elsewhere = _elsewhere(tmp)
    (repo / ".dtype_lint_cache").symlink_to(elsewhere, target_is_directory=True)
    return Expect(findings=(_package(repo),), runs=2, after=_nothing_in(elsewhere),
                  messages={"cli": ("cache folder", "is a symbolic link")})


def case_c_links_inside(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, "")
    elsewhere = _elsewhere(tmp)
    cache = repo / ".dtype_lint_cache"
    cache.mkdir()
    for name in [f"{n:02x}" for n in range(256)] + ["summaries"]:
        (cache / name).symlink_to(elsewhere, target_is_directory=True)
    (cache / ".gitignore").symlink_to(elsewhere / "planted")  # dangling: opening it for writing would create it
    return Expect(findings=(_package(repo),), runs=2, after=_nothing_in(elsewhere))


def case_c_corrupt_entries(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, "")
    finding = _package(repo)
    first = run_process("check", ".", cwd=repo)
    assert first.returncode == 1, first.stderr
    fifo = tmp / "pipe"
    os.mkfifo(fifo)
    bad = [b"", b"{", b"\xff\xfe", b"[" * 100_000, b'{"findings": 1, "deps": {}}', b'{"findings": [[1]], "deps": {}}',
           json.dumps({"findings": [], "deps": {"/dev/zero": "x"}}).encode(),
           json.dumps({"findings": [], "deps": {str(fifo): "x"}}).encode(),
           json.dumps({"name": 1, "imports": [], "stars": {}, "aliases": 1, "classes": {}, "functions": {}}).encode()]
    entries = sorted(p for p in (repo / ".dtype_lint_cache").rglob("*.json"))
    assert entries and any("summaries" in p.parts for p in entries)
    for number, entry in enumerate(entries):
        entry.unlink()
        if number % len(bad) == 0:
            os.mkfifo(entry)  # an entry that would block a plain open()
        else:
            entry.write_bytes(bad[number % len(bad)])

    def rewritten(seen: Seen) -> None:
        if frontend != "cli":
            return  # the other front-ends keep no cache
        assert "internal error" not in seen.text
        for entry in entries:
            assert stat.S_ISREG(entry.lstat().st_mode), f"{entry} was not written again"
            assert isinstance(json.loads(entry.read_bytes()), dict)

    return Expect(findings=(finding,), after=rewritten)


def _notebook(path: Path, outputs_mib: int, source: list[str]) -> None:
    output = {"output_type": "stream", "name": "stdout", "text": ["x" * 1023 + "\n"] * (outputs_mib * 1024)}
    cell = {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {}, "outputs": [output], "source": source}
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def case_d_notebook(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, "")
    lambda_to_workers = ["from torch.utils.data import DataLoader\n",
                         "loader = DataLoader(ds, num_workers=2, collate_fn=lambda b: b)\n"]
    _notebook(repo / "big.ipynb", 100, lambda_to_workers)
    _notebook(repo / "near.ipynb", 60, lambda_to_workers)  # under the 64 MiB limit: linted
    if frontend != "cli":
        return Expect()
    return Expect(findings=(("near.ipynb:cell 1", 2, "DTL202"),), messages={"cli": ("big.ipynb", "over the 64 MiB limit")})


_TEN_MB = "x" * (10 * 1024 * 1024)


def case_e_string_elsewhere(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, 'extend-select = ["DTL304"]', before=f'[project]\nname = "p"\ndescription = "{_TEN_MB}"\n\n')
    return Expect()


def case_e_string_in_the_table(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, f'exclude = ["{_TEN_MB}"]')
    said = ("over the 65536 it takes",)
    # A configuration error: every front-end says it in the CLI's words; the CLI, flake8
    # and mypy stop (exit 2), the server shows it and lints nothing under the table.
    return Expect(control=(), messages={frontend: said})


def case_e_nested_toml(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, "", before="[tool.other]\nx = " + "[" * 10_000 + "]" * 10_000 + "\n\n")
    said = ("nested too deeply",)
    return Expect(control=(), messages={frontend: said})


_DEEP = {  # CPython accepts about 3,000 levels, and 200 brackets
    "parens": "(" * 10_000 + "x" + ")" * 10_000,
    "brackets": "[" * 10_000 + "]" * 10_000,
    "unary": "-" * 10_000 + "x",
    "attributes": "x" + ".a" * 10_000,
    "operators": " + ".join(["x"] * 10_000),
    "lambdas": "lambda: " * 10_000 + "x",
    "conditionals": "x if y else " * 10_000 + "x",
    "subscripts": "x" + "[0]" * 10_000,
    # Below CPython's limit, stored where a rule looks (a lambda bound at module level):
    # LibCST took 1.6 GB and 2.5 GB to parse these.
    "lambdas_2900": "lambda: " * 2_900 + "x",
    "defaults_2900": "lambda a=x: " * 2_900 + "0",
}
# What each front-end's own parser lets through to the plugin (see the module's docstring).
_DEEP_FOR = {"flake8": ("parens", "brackets", "lambdas_2900"), "mypy": ("attributes",)}


def case_f_nesting(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, "")
    names = _DEEP_FOR.get(frontend, tuple(_DEEP))
    for name in names:
        statement = f"fn = {_DEEP[name]}\n" if name.endswith("_2900") else f"def f(x, y):\n    return {_DEEP[name]}\n"
        (repo / f"deep_{name}.py").write_text(f"import torch\n\n\n{statement}")

    def refused(seen: Seen) -> None:
        if frontend in ("cli", "server"):  # one line for each file, naming it and why
            for name in names:
                assert any(f"deep_{name}.py" in line and "nested" in line for line in seen.text.splitlines()), name

    return Expect(files=tuple(f"deep_{name}.py" for name in names) + ("zz_control.py",), after=refused)


def case_g_cycles(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, "")
    finding = _package(repo)
    files = {
        "pkg/__init__.py": "from pkg import *\nfrom . import a\n",
        "pkg/a.py": "from pkg.b import B\n\n\nclass A(B):\n    def __init__(self):\n        self.fn = lambda x: x\n",
        "pkg/b.py": "from pkg.a import A\n\n\nclass B(A):\n    pass\n",
        "pkg/selfie.py": ("import pkg.selfie\nfrom pkg.selfie import *\nfrom pkg.selfie import S\n\n\nclass S(S):\n"
                          "    pass\n\n\nclass T(pkg.selfie.T):\n    def __init__(self):\n        self.fn = lambda x: x\n"),
        "pkg/s1.py": "from pkg.s2 import *\n\n\nclass V(U):\n    def __init__(self):\n        self.fn = lambda x: x\n",
        "pkg/s2.py": "from pkg.s1 import *\n\n\nclass U(V):\n    pass\n",
        "pkg/relative.py": "from .relative import R\nfrom . import relative\n\n\nclass R(relative.R):\n    pass\n",
    }
    for name, text in files.items():
        (repo / name).write_text(text)
    return Expect(findings=(finding,))


def case_h_special_files(repo: Path, tmp: Path, frontend: str) -> Expect:
    _config(repo, "")
    os.mkfifo(repo / "pipe.py")  # a plain open() waits for a writer
    (repo / "zero.py").symlink_to("/dev/zero")  # a plain read() never ends
    said = ("pipe.py: error: not a regular file", "zero.py: error: not a regular file")
    # flake8, mypy and an editor open what they are given themselves: only the CLI walks
    # a folder and meets them.
    return Expect(files=("zz_control.py",), messages={"cli": said})


CASES = {name[len("case_"):]: case for name, case in globals().items() if name.startswith("case_")}


# -- the front-ends --------------------------------------------------------------------


def _measured(command: list[str], cwd: Path, tmp: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run ``command`` in a process of its own; assert its bounds; its exit code and output."""
    usage = tmp / "usage"
    process = subprocess.Popen([sys.executable, "-c", MEASURE, str(usage), *command], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=BOUND_SECONDS + 30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AssertionError(f"{command[:4]} ran past {BOUND_SECONDS} s") from None
    _within_bounds(usage, command)
    return process.returncode, out.decode("utf-8", "replace")


def _within_bounds(usage: Path, what) -> None:
    seconds, peak = map(float, usage.read_text().split())
    assert seconds <= BOUND_SECONDS, f"{what}: {seconds:.0f} s"
    assert peak <= BOUND_BYTES, f"{what}: {peak / 2**20:.0f} MiB at peak"


def _parsed(output: str, repo: Path) -> set[tuple[str, int, str]]:
    found = set()
    for line in output.splitlines():
        match = FINDING.match(line)
        if match and (match["code"] or match["mypy"]):
            path = match["path"].removeprefix("./")
            found.add((path.removeprefix(str(repo) + os.sep), int(match["line"]), match["code"] or match["mypy"]))
    return found


def _python_files(repo: Path) -> tuple[str, ...]:
    return tuple(sorted(str(p.relative_to(repo)) for p in repo.rglob("*.py")
                        if not any(part.startswith(".") for part in p.relative_to(repo).parts)))


def run_cli(repo: Path, tmp: Path, files: tuple[str, ...], env: dict[str, str]) -> Seen:
    _, out = _measured([sys.executable, "-m", "dtype_lint", "check", "."], repo, tmp, env)
    return Seen(_parsed(out, repo), out)


def run_flake8(repo: Path, tmp: Path, files: tuple[str, ...], env: dict[str, str]) -> Seen:
    _, out = _measured([sys.executable, "-m", "flake8", "--select", "DTL,E999", *files], repo, tmp, env)
    return Seen(_parsed(out, repo), out)


def run_mypy(repo: Path, tmp: Path, files: tuple[str, ...], env: dict[str, str]) -> Seen:
    config = tmp / "mypy.ini"
    config.write_text("[mypy]\nplugins = dtype_lint.mypy_plugin\nfollow_imports = skip\nignore_missing_imports = True\n")
    command = [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(tmp / "mypy-cache"), *files]
    _, out = _measured(command, repo, tmp, env)
    return Seen(_parsed(out, repo), out)


def run_server(repo: Path, tmp: Path, files: tuple[str, ...], env: dict[str, str]) -> Seen:
    return asyncio.run(_serve(repo, tmp, files, env))


async def _serve(repo: Path, tmp: Path, files: tuple[str, ...], env: dict[str, str]) -> Seen:
    import pytest_lsp
    from lsprotocol import types
    from pytest_lsp import ClientServerConfig

    usage = tmp / "usage"
    client = await ClientServerConfig(server_command=[sys.executable, "-c", MEASURE, str(usage), sys.executable, "-m",
                                                      "dtype_lint", "server"], server_env=env).start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=pytest_lsp.client_capabilities("visual-studio-code"), root_uri=repo.as_uri()))
        uris = {(repo / name).as_uri(): name for name in files}
        for uri, name in uris.items():
            item = types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                          text=(repo / name).read_text(encoding="utf-8"))
            client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        for _ in range(BOUND_SECONDS * 20):
            if set(uris) <= set(client.diagnostics):
                break
            await asyncio.sleep(0.05)
        findings = {(uris[uri], d.range.start.line + 1, str(d.code)) for uri, diagnostics in client.diagnostics.items()
                    for d in diagnostics if uri in uris}
        said = "\n".join(m.message for m in [*client.log_messages, *client.messages])
        assert set(uris) <= set(client.diagnostics), f"no diagnostics for {set(uris) - set(client.diagnostics)}: {said}"
    finally:
        await client.shutdown_session()
    _within_bounds(usage, "dtype-lint server")
    return Seen(findings, said)


RUN = {"cli": run_cli, "flake8": run_flake8, "mypy": run_mypy, "server": run_server}


def _environ(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DTYPE_LINT_PYTHON"}
    return {**env, **extra}


# -- the tests -------------------------------------------------------------------------


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_repository_runs_nothing_stays_bounded_and_the_rest_is_linted(case, frontend, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "zz_control.py").write_text(HAZARD)
    expect = CASES[case](repo, tmp_path, frontend)
    files = expect.files or _python_files(repo)
    for _ in range(expect.runs):
        seen = RUN[frontend](repo, tmp_path, files, _environ())
    assert not list(tmp_path.glob("MARKER*")), "something of the repository's was executed"
    if frontend in expect.control:
        assert CONTROL in seen.findings, f"the rest was not linted:\n{seen.text}"
    for finding in expect.findings:
        assert finding in seen.findings, f"{finding} not reported:\n{seen.text}"
    for words in expect.messages.get(frontend, ()):
        assert words in seen.text, f"no {words!r} in:\n{seen.text}"
    assert all(len(line) < 1000 for line in seen.text.splitlines() if "dtype-lint" in line), "a message quotes too much"
    expect.after(seen)


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_an_interpreter_is_run_only_where_the_user_chooses_it(frontend, tmp_path):
    """$DTYPE_LINT_PYTHON is the user's, not the repository's: every front-end runs it
    and looks for installed packages where it answers (the configuration's own
    ``python`` is then left alone)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "zz_control.py").write_text(HAZARD)
    (repo / "model.py").write_text(HEAD)
    _config(repo, 'python = "./evil.sh"')
    _script(repo / "evil.sh", tmp_path / "MARKER-evil")
    (tmp_path / "site" / "extlib").mkdir(parents=True)
    (tmp_path / "site" / "extlib" / "__init__.py").write_text(EXTLIB)
    _script(tmp_path / "chosen" / "python", tmp_path / "chosen-ran", json.dumps([str(tmp_path / "site")]))
    env = _environ(DTYPE_LINT_PYTHON=str(tmp_path / "chosen" / "python"))
    seen = RUN[frontend](repo, tmp_path, _python_files(repo), env)
    assert (tmp_path / "chosen-ran").exists()
    assert not (tmp_path / "MARKER-evil").exists()
    assert HEAD_FINDING in seen.findings and CONTROL in seen.findings, seen.text


def test_the_command_line_flag_wins_over_the_variable(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "model.py").write_text(HEAD)
    (tmp_path / "site" / "extlib").mkdir(parents=True)
    (tmp_path / "site" / "extlib" / "__init__.py").write_text(EXTLIB)
    _script(tmp_path / "variable", tmp_path / "variable-ran")
    _script(tmp_path / "flag", tmp_path / "flag-ran", json.dumps([str(tmp_path / "site")]))
    code, out = _measured([sys.executable, "-m", "dtype_lint", "check", "--no-cache", "--python", str(tmp_path / "flag"),
                           "."], repo, tmp_path, _environ(DTYPE_LINT_PYTHON=str(tmp_path / "variable")))
    assert (tmp_path / "flag-ran").exists() and not (tmp_path / "variable-ran").exists()
    assert HEAD_FINDING in _parsed(out, repo)
    # A chosen interpreter that cannot be run: said, and the rest linted.
    code, out = _measured([sys.executable, "-m", "dtype_lint", "check", "--no-cache", "--python", "/dev/zero", "."],
                          repo, tmp_path, _environ())
    assert "--python" in out and "cannot run it" in out and code == 0
