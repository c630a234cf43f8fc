"""Shared helpers: run the real CLI in-process or as a subprocess, and read fixtures."""

from __future__ import annotations

import json
import multiprocessing
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dtype_lint.frontends.cli import main

# The CLI run in this process (the `cli` fixture) lints a folder with a pool of worker
# processes, forked by default on Linux; once a runtime test has imported JAX, a fork of
# this process may deadlock, and JAX warns at each. The workers start from a fork server
# instead (a fresh process that never imports JAX), which the pool supports as it
# supports spawn, and which Python 3.14 makes the default.
if "forkserver" in multiprocessing.get_all_start_methods():
    multiprocessing.set_start_method("forkserver", force=True)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# `# expect: DTL101` (high confidence), `# expect: DTL303 low`, `# expect: DTL101, DTL204 medium`.
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DTL\d+(?:\s+(?:low|medium|high))?(?:\s*,\s*DTL\d+(?:\s+(?:low|medium|high))?)*)")
DEFAULT_LEVELS = ("medium", "high")  # what a run with the default min-confidence shows


def fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("dtl*.py"))


def package_fixture_files() -> list[Path]:
    """The multi-file fixture package's files (cross-file findings)."""
    return sorted((FIXTURES / "xfile").rglob("*.py"))


def notebook_fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("nb_*.ipynb"))


def notebook_expectations(path: Path) -> set[tuple[int, int, str]]:
    """(cell, line, code) for each `# expect: CODE` in a notebook's code cells (cells
    numbered from 1 among all cells, as findings name them)."""
    import nbformat

    found = set()
    for cell_number, cell in enumerate(nbformat.read(path, as_version=4).cells, start=1):
        if cell.cell_type != "code":
            continue
        for number, line in enumerate(cell.source.splitlines(), start=1):
            match = EXPECT.search(line)
            if match:
                found |= {(cell_number, number, code) for code, level in _codes(match) if level in DEFAULT_LEVELS}
    return found


def _codes(match: re.Match) -> list[tuple[str, str]]:
    """(code, expected confidence) for each code of an expectation (high unless written)."""
    out = []
    for item in match.group("codes").split(","):
        code, _, level = item.strip().partition(" ")
        out.append((code, level.strip() or "high"))
    return out


def expectations(path: Path) -> set[tuple[int, str]]:
    """(line, code) pairs written as `# expect: CODE[, CODE]` beside the offending line,
    for the findings a run with the default min-confidence shows."""
    return {(line, code) for line, code, level in leveled_expectations(path) if level in DEFAULT_LEVELS}


def leveled_expectations(path: Path) -> set[tuple[int, str, str]]:
    """(line, code, confidence) of every expectation, the audit mode's (low included)."""
    found = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            found |= {(number, code, level) for code, level in _codes(match)}
    return found


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run `dtype-lint ARGS` in this process; returns exit code and captured output."""

    def run(*args: str, cwd: Path | None = None, stdin: bytes | None = None) -> Run:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        if stdin is not None:
            import io

            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        code = main(list(args))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


def run_process(*args: str, cwd: Path | None = None, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dtype_lint", *args], cwd=cwd, input=stdin, capture_output=True, timeout=300
    )


@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for every run with tests/mypy/data/mypy.ini in the session: torch,
    jax and flax are analysed once, by whichever test runs mypy on them first."""
    return tmp_path_factory.mktemp("mypy-cache")
