"""Fixes: diff, safe vs unsafe, idempotence, atomic writes that keep encoding and endings."""

from __future__ import annotations

import os
import stat

from dtype_lint.core.engine import Source
from dtype_lint.core.finding import Edit
from dtype_lint.core.fixes import apply_edits, fixed_text, write_atomic

UNSAFE_ONLY = "import torch\ndef f(x, dtype=torch.float32):\n    return x\n"
BOTH = "import jax\nimport jax.numpy as jnp\ndef f(x, dtype=jnp.float32):\n    return jax.tree_map(g, x)\n"


def test_diff_writes_nothing(cli, tmp_path):
    path = tmp_path / "m.py"
    path.write_text(UNSAFE_ONLY)
    result = cli("check", str(path), "--diff", "--unsafe-fixes")
    assert result.code == 1
    assert "-def f(x, dtype=torch.float32):" in result.out
    assert "+def f(x, dtype=None):" in result.out
    assert path.read_text() == UNSAFE_ONLY


def test_safe_fixes_only_without_unsafe_flag(cli, tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BOTH)
    result = cli("check", str(path), "--fix", "--extend-select", "DTL304")
    assert path.read_text() == BOTH.replace("jax.tree_map", "jax.tree.map")
    assert result.code == 1  # the unsafe DTL101 is still there
    assert "DTL101" in result.out and "DTL304" not in result.out
    result = cli("check", str(path), "--fix", "--unsafe-fixes", "--extend-select", "DTL304")
    assert result.code == 0
    assert "dtype=None" in path.read_text()


def test_fix_command_is_check_fix(cli, tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BOTH)
    cli("fix", str(path), "--select", "DTL304")
    assert "jax.tree.map" in path.read_text()


def test_fix_is_idempotent_and_keeps_crlf_bom_and_mode(cli, tmp_path):
    path = tmp_path / "m.py"
    original = ("\ufeff" + BOTH).replace("\n", "\r\n").encode("utf-8")
    path.write_bytes(original)
    os.chmod(path, 0o750)
    cli("check", str(path), "--fix", "--unsafe-fixes", "--extend-select", "DTL304")
    once = path.read_bytes()
    assert once.startswith(b"\xef\xbb\xbf") and b"\r\n" in once and b"\n" not in once.replace(b"\r\n", b"")
    assert b"jax.tree.map" in once and b"dtype=None" in once
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o750
    cli("check", str(path), "--fix", "--unsafe-fixes", "--extend-select", "DTL304")
    assert path.read_bytes() == once
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".dtype-lint-")]


def test_fix_keeps_a_latin1_encoding(cli, tmp_path):
    path = tmp_path / "m.py"
    text = "# -*- coding: latin-1 -*-\n# caf\xe9\nimport torch\ndef f(x, dtype=torch.float32): ...\n"
    path.write_bytes(text.encode("latin-1"))
    cli("check", str(path), "--fix", "--unsafe-fixes")
    assert path.read_bytes() == text.replace("torch.float32", "None").encode("latin-1")


def test_fix_that_would_not_parse_is_dropped():
    bad = [Edit(1, 1, 1, 4, "def (")]
    text = "x = 1\n"
    assert apply_edits(text, bad) == "def ( 1\n"
    from dtype_lint.core.finding import Finding, Fix

    finding = Finding("m.py", 1, 1, 1, 4, "DTL101", "n", "m", Fix("unsafe", tuple(bad)))
    try:
        fixed_text(text, [finding])
    except Exception as exc:  # LintError
        assert "would not parse" in str(exc)
    else:
        raise AssertionError("an unparsable fix was applied")


def test_write_atomic_refuses_a_file_changed_since_read(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b"x = 1\n")
    try:
        write_atomic(str(path), b"x = 2\n", expected_old=b"x = 0\n")
    except Exception as exc:
        assert "changed" in str(exc)
    else:
        raise AssertionError("overwrote a changed file")
    assert path.read_bytes() == b"x = 1\n"


def test_stdin_fix_prints_the_fixed_code(cli):
    result = cli("check", "-", "--fix", "--unsafe-fixes", stdin=UNSAFE_ONLY.encode())
    assert result.out == UNSAFE_ONLY.replace("torch.float32", "None")
    assert result.code == 0


def test_source_round_trip():
    source = Source.from_bytes("# coding: latin-1\nx = '\xe9'\n".encode("latin-1"))
    assert source.encoding == "iso-8859-1"
    assert source.encode(source.text) == "# coding: latin-1\nx = '\xe9'\n".encode("latin-1")


def test_no_fix_where_libcst_miscounts_lines(cli, tmp_path):
    # Found by fuzzing: LibCST numbers lines wrongly after a backslash continuation
    # ended by \r\n, so the fix would land on the wrong line; it is withheld instead.
    text = "\n\\\r\ndef outer():\n    import torch\n    def f(x, dtype=torch.float32):\n        return x\n"
    path = tmp_path / "m.py"
    path.write_bytes(text.encode())
    result = cli("check", str(path), "--fix", "--unsafe-fixes", "--output-format", "json")
    assert path.read_bytes() == text.encode()
    assert [(f["code"], f["fix"]) for f in result.json()] == [("DTL101", None)]
