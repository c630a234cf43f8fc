"""Hostile input: every bad file gets a one-line error naming it, exit 2, and every other
file is still linted; valid oddities (BOM, CRLF, tabs, empty files) lint normally."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from dtype_lint.project.config import Config
from dtype_lint.project.discovery import discover
from dtype_lint.project.file_lint import lint_path

HAZARD = "import torch\ndef f(x, dtype=torch.float32):\n    return x\n"
HAZARD_LINE = ":2:16: DTL101 "


def check(cli, folder: Path):
    """Lint the folder beside a known-bad file; return the result and its error lines."""
    (folder / "zz_control.py").write_text(HAZARD)
    result = cli("check", str(folder))
    assert f"zz_control.py{HAZARD_LINE}" in result.out, "the other files were not linted"
    errors = [line for line in result.err.splitlines() if line]
    return result, errors


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("syntax.py", b"def f(:\n    pass\n", "syntax error"),
        ("bad_utf8.py", b"x = '\xff\xfe\xfa'\n", "cannot decode"),
        ("nul.py", b"import torch\nx = 1\x00\n", "NUL byte"),
        ("bad_cookie.py", b"# -*- coding: no-such-codec -*-\nx = 1\n", "cannot decode"),
        ("deep_parens.py", b"x = torch.float32 + " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n", "nested"),
        ("deep_unary.py", b"import torch\nx = torch.float32 + " + b"-" * 20000 + b"1\n", "nested"),
        ("long_chain.py", b"import torch\nx = " + b" + ".join([b"torch.float32"] * 20000) + b"\n", "nested"),
    ],
    ids=lambda v: v if isinstance(v, str) and v.endswith(".py") else "",
)
def test_bad_file_is_one_line_error(cli, tmp_path, name, content, reason):
    (tmp_path / name).write_bytes(content)
    result, errors = check(cli, tmp_path)
    assert result.code == 2
    assert len(errors) == 1
    # a syntax error is placed, path:line:column, as findings are
    assert re.match(rf"{re.escape(str(tmp_path / name))}(:\d+:\d+)?: error: ", errors[0]) and reason in errors[0]


def test_huge_file_is_refused_quickly(cli, tmp_path):
    body = HAZARD * (20 * 1024 * 1024 // len(HAZARD) + 1)
    (tmp_path / "huge.py").write_text(body)
    result, errors = check(cli, tmp_path)
    assert result.code == 2
    assert errors == [f"{tmp_path / 'huge.py'}: error: 20.0 MiB is over the 4 MiB limit for one file; not linted"]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("bom.py", b"\xef\xbb\xbf" + HAZARD.encode()),
        ("crlf.py", HAZARD.replace("\n", "\r\n").encode()),
        ("mixed.py", b"import torch\r\ndef f(x, dtype=torch.float32):\n    return x\r"),
        ("tabs.py", b"import torch\ndef f(x, dtype=torch.float32):\n\treturn x\n"),
        ("latin1.py", "# -*- coding: latin-1 -*-\nimport torch\n# é\ndef f(dtype=torch.float32): ...\n".encode("latin-1")),
        ("long_line.py", b"import torch\nx = [" + b"1, " * 50000 + b"]\ndef f(x, dtype=torch.float32): ...\n"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_valid_oddities_are_linted(cli, tmp_path, name, content):
    (tmp_path / name).write_bytes(content)
    result = cli("check", str(tmp_path / name), "--output-format", "json")
    assert result.code == 1, result.err
    assert [f["code"] for f in result.json()] == ["DTL101"]


def test_empty_file_is_clean(cli, tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    assert cli("check", str(tmp_path / "empty.py")).code == 0


def test_symlink_loops(cli, tmp_path):
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to(tmp_path)  # a directory loop: never followed
    result, errors = check(cli, tmp_path)
    assert result.code == 2
    assert sorted(errors) == [
        f"{tmp_path / 'a.py'}: error: cannot read: Too many levels of symbolic links",
        f"{tmp_path / 'b.py'}: error: cannot read: Too many levels of symbolic links",
    ]


def test_fifo_does_not_hang(cli, tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    result, errors = check(cli, tmp_path)
    assert errors == [f"{tmp_path / 'pipe.py'}: error: not a regular file"]
    assert result.code == 2


def test_directory_named_like_a_module_is_walked(cli, tmp_path):
    (tmp_path / "pkg.py").mkdir()
    (tmp_path / "pkg.py" / "inner.py").write_text(HAZARD)
    result = cli("check", str(tmp_path))
    assert f"inner.py{HAZARD_LINE}" in result.out and result.code == 1


def test_file_deleted_during_the_run(tmp_path):
    (tmp_path / "gone.py").write_text(HAZARD)
    (tmp_path / "kept.py").write_text(HAZARD)
    config = Config()
    paths = list(discover([str(tmp_path)], config.include_spec(), config.exclude_spec(), str(tmp_path)))
    (tmp_path / "gone.py").unlink()
    results = {Path(p).name: lint_path(p, config) for p in paths}
    assert results["gone.py"].error.reason == "cannot read: No such file or directory"
    assert [f.code for f in results["kept.py"].findings] == ["DTL101"]


@pytest.mark.skipif(not hasattr(os, "seteuid") or os.geteuid() != 0, reason="drops privileges from root")
def test_unreadable_file():
    folder = Path(tempfile.mkdtemp())  # pytest's tmp_path sits in a folder only root may enter
    try:
        os.chmod(folder, 0o755)
        (folder / "secret.py").write_text(HAZARD)
        (folder / "open.py").write_text(HAZARD)
        os.chmod(folder / "secret.py", 0)
        os.chmod(folder / "open.py", 0o644)
        config = Config()
        lint_path(str(folder / "open.py"), config)  # load lazy imports while /root is readable
        os.seteuid(65534)  # root reads anything; an ordinary user cannot read mode 000
        try:
            secret = lint_path(str(folder / "secret.py"), config)
            readable = lint_path(str(folder / "open.py"), config)
        finally:
            os.seteuid(0)
        assert secret.error.reason == "cannot read: Permission denied"
        assert [f.code for f in readable.findings] == ["DTL101"]
    finally:
        shutil.rmtree(folder)
