"""Finding an environment's installed packages by reading it (core.model.environment):
the search path read is the one its interpreter gives when asked, for the running
virtual environment, a venv with the system's packages and ``.pth`` files, and a system
interpreter; the layouts of conda and Windows; and what is no environment is refused
with a reason, never run and never left hanging on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dtype_lint.core.model import site_query
from dtype_lint.core.model.environment import read_environment
from dtype_lint.core.model.finder import located
from dtype_lint.project.config import PYTHON_VARIABLE, load_config

posix_only = pytest.mark.skipif(os.name != "posix", reason="a POSIX layout, FIFOs and devices")
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


def asked(python: str) -> tuple[str, ...]:
    """The interpreter's own answer: its search path without the standard library (as
    ``--python`` asks it), run with no PYTHONPATH, which is the caller's and not the
    environment's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = subprocess.run([python, site_query.__file__], capture_output=True, text=True, env=env, timeout=120,
                         check=True).stdout
    return tuple(json.loads(out))


def read_quickly(path: str):
    """``read_environment(path)``, failing the test (not hanging it) if it blocks."""
    result = []
    reader = threading.Thread(target=lambda: result.append(read_environment(path)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), f"reading {path} hangs"
    return result[0]


def test_the_running_environment_read_is_the_search_path_its_interpreter_gives():
    expected = asked(sys.executable)
    assert expected, "the running interpreter has no site-packages"
    assert read_environment(sys.prefix).paths == expected  # python = ".venv"
    assert read_environment(sys.executable).paths == expected  # python = ".venv/bin/python"
    assert located(sys.prefix).paths == expected and located(sys.prefix).problem is None


@posix_only
def test_a_venv_with_the_systems_packages_and_pth_files_reads_as_its_interpreter_answers(tmp_path):
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(env)],
                   check=True, timeout=300)
    (site,) = env.glob("lib/python3.*/site-packages")
    (tmp_path / "elsewhere").mkdir()
    (site / "relative").mkdir()
    (site / "up").mkdir()
    marker = tmp_path / "executed"
    (site / "a.pth").write_text("# a comment\n\nrelative\nrelative\nmissing\n"
                                f"{tmp_path / 'elsewhere'}\nimport os; open({str(marker)!r}, 'w').close()\n")
    (site / "b.pth").write_text("up/../relative\nup\n", encoding="utf-8-sig")  # a BOM, as site accepts

    read = read_environment(str(env / "bin" / "python")).paths
    assert not marker.exists(), "reading ran a .pth file's import line"
    answer = asked(str(env / "bin" / "python"))
    assert marker.exists()  # the line was code: the interpreter's site ran it
    assert read == answer
    assert str(site / "relative") in read and str(tmp_path / "elsewhere") in read
    assert read_environment(str(env)).paths == answer


@posix_only
@pytest.mark.parametrize("python", sorted({os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
                                          "/usr/bin/python3"}))
def test_a_system_interpreter_reads_as_it_answers(python):
    if not os.path.isfile(python):
        pytest.skip(f"no {python} here")
    assert read_environment(python).paths == asked(python)


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")


@pytest.mark.parametrize(("files", "given", "expected"), [
    # conda: no pyvenv.cfg; the prefix above bin/python holds lib/python3.X
    (["conda-meta/history", "bin/python3.12", "lib/python3.12/os.py", "lib/python3.12/site-packages/"],
     "bin/python3.12", ["lib/python3.12/site-packages"]),
    (["conda-meta/history", "bin/python", "lib/python3.12/site-packages/"], ".", ["lib/python3.12/site-packages"]),
    # a venv made by uv writes version_info; free-threaded builds have python3.13t
    (["pyvenv.cfg=version_info = 3.13.1\ninclude-system-site-packages = false\n",
      "bin/python", "lib/python3.13t/site-packages/"], "bin/python", ["lib/python3.13t/site-packages"]),
    # a real lib64 beside lib (Fedora's platlibdir) comes first
    (["pyvenv.cfg=version = 3.12.0\ninclude-system-site-packages = false\n", "lib/python3.12/site-packages/",
      "lib64/python3.12/site-packages/"], ".", ["lib64/python3.12/site-packages", "lib/python3.12/site-packages"]),
    # Windows: a venv's Scripts\python.exe, a conda env's python.exe at the top
    (["pyvenv.cfg=version = 3.12.0\ninclude-system-site-packages = false\n", "Scripts/python.exe",
      "Lib/site-packages/"], "Scripts/python.exe", [".", "Lib/site-packages"]),
    (["conda-meta/history", "python.exe", "Lib/site-packages/"], "python.exe", [".", "Lib/site-packages"]),
])
def test_layouts_read(tmp_path, files, given, expected):
    for item in files:
        name, _, content = item.partition("=")
        _tree(tmp_path, [name])
        if content:
            (tmp_path / name).write_text(content)
    found = read_environment(str(tmp_path / given))
    assert found.problem is None
    assert found.paths == tuple(os.path.normpath(tmp_path / e) for e in expected)


@posix_only
@pytest.mark.parametrize("make", ["missing", "device", "fifo", "long", "nul", "no environment"])
def test_what_is_no_environment_is_refused_with_a_reason(tmp_path, make):
    path = {"missing": str(tmp_path / "nowhere"), "device": "/dev/zero", "fifo": str(tmp_path / "pipe"),
            "long": str(tmp_path / ("x" * 5000)), "nul": str(tmp_path / "a\0b"),
            "no environment": str(tmp_path / "evil.sh")}[make]
    if make == "fifo":
        os.mkfifo(path)
    if make == "no environment":
        Path(path).write_text("#!/bin/sh\ntouch executed\n")
    found = read_quickly(path)
    assert found.paths == () and found.problem


@posix_only
def test_a_fifo_or_device_inside_an_environment_is_never_read(tmp_path):
    (tmp_path / "lib" / f"python{VERSION}" / "site-packages").mkdir(parents=True)
    os.symlink("/dev/zero", tmp_path / "pyvenv.cfg")  # not a venv's configuration: read as a prefix
    os.mkfifo(tmp_path / "lib" / f"python{VERSION}" / "site-packages" / "a.pth")
    os.symlink("/dev/zero", tmp_path / "lib" / f"python{VERSION}" / "site-packages" / "b.pth")
    found = read_quickly(str(tmp_path))
    assert found.problem is None
    assert found.paths[-1] == str(tmp_path / "lib" / f"python{VERSION}" / "site-packages")


def test_the_configured_python_is_relative_to_the_configuration_and_the_variable_wins(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.dtype-lint]\npython = ".venv"\n')
    monkeypatch.delenv(PYTHON_VARIABLE, raising=False)
    config = load_config(tmp_path / "pyproject.toml")
    assert config.python == str(tmp_path / ".venv") and config.interpreter is None
    monkeypatch.setenv(PYTHON_VARIABLE, sys.executable)
    assert load_config(tmp_path / "pyproject.toml").interpreter == sys.executable
    assert load_config(None).interpreter == sys.executable  # with no configuration file too
