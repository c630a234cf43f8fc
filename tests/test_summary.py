"""The closing summary, -q and --silent, and colour (terminal, NO_COLOR, FORCE_COLOR)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

HAZARD = "import torch\ndef f(x, dtype=torch.float32):\n    return x\n"  # DTL101, unsafe fix
ALIAS = "import jax\ny = jax.tree_map(f, x)\n"  # DTL304 (opt-in), safe fix
NO_FIX = "import torch\nx = m.get(k, torch.float32)\n"  # DTL102, no fix


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


@pytest.fixture
def project(tmp_path):
    for name, text in (("a.py", HAZARD), ("b.py", ALIAS), ("c.py", NO_FIX)):
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("files", "extra", "last"),
    [
        (["a.py", "b.py", "c.py"], ["--extend-select", "DTL304"],
         "Found 3 findings (1 fixable with --fix; 1 more with --unsafe-fixes)."),
        (["a.py"], [], "Found 1 finding (1 fixable with --unsafe-fixes)."),
        (["c.py"], [], "Found 1 finding."),
        (["b.py"], [], "All checks passed!"),
        (["a.py", "c.py"], ["--output-format", "full"], "Found 2 findings (1 fixable with --unsafe-fixes)."),
        (["b.py"], ["--extend-select", "DTL304", "--fix"], "Found 1 finding (1 fixed, 0 remaining)."),
        (["a.py", "c.py"], ["--statistics"], "Found 2 findings (1 fixable with --unsafe-fixes)."),
    ],
)
def test_summary_line(cli, project, files, extra, last):
    result = cli("check", "--no-cache", *[str(project / f) for f in files], *extra)
    assert result.out.splitlines()[-1] == last


def test_files_that_could_not_be_linted_are_counted(cli, project):
    (project / "broken.py").write_text("def f(:\n")
    (project / "nul.py").write_bytes(b"x = 1\x00\n")
    out = cli("check", "--no-cache", str(project)).out
    assert out.splitlines()[-1] == "Found 2 findings (1 fixable with --unsafe-fixes). 2 files could not be linted."
    out = cli("check", "--no-cache", str(project / "b.py"), str(project / "broken.py")).out
    assert out == "No findings in the files linted. 1 file could not be linted.\n"
    # Nothing linted at all: said as such, not as a lint that found nothing.
    out = cli("check", "--no-cache", str(project / "broken.py"), str(project / "nul.py")).out
    assert out == "No file was linted: 2 files could not be linted.\n"
    out = cli("check", "-", "--stdin-filename", "broken.py", stdin=b"def f(:\n").out
    assert out == "No file was linted: 1 file could not be linted.\n"


def test_machine_formats_have_no_summary(cli, project):
    for fmt in ("json", "sarif", "github"):
        assert "Found" not in cli("check", "--no-cache", str(project), "--output-format", fmt).out


def test_stdin_summary(cli):
    result = cli("check", "-", "--stdin-filename", "m.py", stdin=HAZARD.encode())
    assert result.out.splitlines()[-1] == "Found 1 finding (1 fixable with --unsafe-fixes)."


def test_quiet_prints_findings_only_and_silent_nothing(cli, project):
    (project / "broken.py").write_text("def f(:\n")
    quiet = cli("check", "--no-cache", str(project), "-q")
    assert [line.split(": ")[1].split()[0] for line in quiet.out.splitlines()] == ["DTL101", "DTL102"]
    assert "broken.py:1:7: error" in quiet.err and quiet.code == 2
    silent = cli("check", "--no-cache", str(project), "--silent")
    assert (silent.out, silent.err, silent.code) == ("", "", 2)
    (project / "broken.py").unlink()
    assert cli("check", "--no-cache", str(project), "--silent").code == 1
    assert cli("check", "--no-cache", str(project / "b.py"), "--silent").code == 0


@pytest.mark.parametrize(
    ("env", "colored"),
    [({}, False), ({"FORCE_COLOR": "1"}, True), ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False)],
)
def test_colour_when_piped(cli, project, monkeypatch, env, colored):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for fmt in ("text", "full"):
        out = cli("check", "--no-cache", str(project / "a.py"), "--output-format", fmt).out
        assert ("\x1b[1;31mDTL101\x1b[0m" in out) is colored
        assert out.splitlines()[-1] == "Found 1 finding (1 fixable with --unsafe-fixes)."
    assert "\x1b[" not in cli("check", "--no-cache", str(project / "a.py"), "--output-format", "json").out


def _on_a_terminal(args, env):
    """Run the CLI with stdout on a pseudo-terminal; returns what it wrote there."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "dtype_lint", *args], stdout=follower,
                            stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the process is done writing
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_and_no_color(project):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    args = ["check", "--no-cache", str(project / "a.py")]
    painted = _on_a_terminal(args, env)
    assert "\x1b[1;31mDTL101\x1b[0m" in painted
    assert f"\x1b[1m{project / 'a.py'}\x1b[0m\x1b[36m:2:16:\x1b[0m" in painted
    assert "\x1b[" not in _on_a_terminal(args, {**env, "NO_COLOR": "1"})
