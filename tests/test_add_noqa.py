"""`dtype-lint check --add-noqa`: counts, idempotence, a clean check afterwards, the
atomic writer's guarantees, and files it must not touch."""

from __future__ import annotations

import os

from conftest import run_process
from dtype_lint.core.engine import Source
from dtype_lint.project.add_noqa import add_noqa
from dtype_lint.project.config import Config
from dtype_lint.project.file_lint import lint_path

HAZARD = "import torch\ndef f(x, dtype=torch.float32):\n    return x\n"
TWO = "import torch\ndef f(x, dtype=torch.float32): return m.get(k, torch.float32)  # keep\n"


def test_adds_counts_and_a_second_run_adds_nothing(cli, tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    (tmp_path / "b.py").write_text(TWO)
    (tmp_path / "clean.py").write_text("x = 1\n")
    first = cli("check", str(tmp_path), "--add-noqa", "--no-cache")
    assert first.out.splitlines()[-1] == "Added 2 `# noqa` comments in 2 files."
    assert first.code == 0
    assert (tmp_path / "a.py").read_text().splitlines()[1] == "def f(x, dtype=torch.float32):  # noqa: DTL101"
    assert (tmp_path / "b.py").read_text().splitlines()[1].endswith("  # keep  # noqa: DTL101, DTL102")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    second = cli("check", str(tmp_path), "--add-noqa", "--no-cache")
    assert second.out.splitlines()[-1] == "Added 0 `# noqa` comments in 0 files."
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    after = cli("check", str(tmp_path), "--no-cache")
    assert (after.code, after.out) == (0, "All checks passed!\n")


def test_results_from_the_cache_get_comments_too(cli, tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    cache = str(tmp_path / "cache")
    assert cli("check", str(tmp_path / "a.py"), "--cache-dir", cache).code == 1  # fills the cache
    result = cli("check", str(tmp_path / "a.py"), "--cache-dir", cache, "--add-noqa")
    assert result.out.splitlines()[-1] == "Added 1 `# noqa` comment in 1 file."
    assert cli("check", str(tmp_path / "a.py"), "--cache-dir", cache).code == 0


def test_select_decides_which_codes(cli, tmp_path):
    (tmp_path / "b.py").write_text(TWO)
    cli("check", str(tmp_path), "--add-noqa", "--select", "DTL102", "--no-cache")
    assert (tmp_path / "b.py").read_text().splitlines()[1].endswith("  # keep  # noqa: DTL102")
    assert cli("check", str(tmp_path), "--no-cache").code == 1  # DTL101 is still reported


def test_keeps_encoding_bom_line_endings_and_mode(cli, tmp_path):
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\r\nimport torch\r\n# caf\xe9\r\ndef f(x, dtype=torch.float32):\r\n    return x\r\n")
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfimport torch\rdef f(x, dtype=torch.float32):\r    return x\r")
    os.chmod(bom, 0o751)
    assert cli("check", str(tmp_path), "--add-noqa", "--no-cache").code == 0
    assert latin.read_bytes() == (b"# -*- coding: latin-1 -*-\r\nimport torch\r\n# caf\xe9\r\n"
                                  b"def f(x, dtype=torch.float32):  # noqa: DTL101\r\n    return x\r\n")
    assert bom.read_bytes() == b"\xef\xbb\xbfimport torch\rdef f(x, dtype=torch.float32):  # noqa: DTL101\r    return x\r"
    assert os.stat(bom).st_mode & 0o777 == 0o751


def test_unparsable_and_undecodable_files_are_reported_and_left_alone(cli, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\ndef f(x, dtype=torch.float32:\n")
    undecodable = tmp_path / "bytes.py"
    undecodable.write_bytes(b"import torch\ndef f(x, dtype=torch.float32): pass  # \xff\n")
    (tmp_path / "a.py").write_text(HAZARD)
    olds = broken.read_bytes(), undecodable.read_bytes()
    result = cli("check", str(tmp_path), "--add-noqa", "--no-cache")
    assert result.code == 2
    assert "broken.py:2:29: error: syntax error" in result.err
    assert "bytes.py: error: cannot decode" in result.err
    assert (broken.read_bytes(), undecodable.read_bytes()) == olds
    assert result.out.splitlines()[-1] == "Added 1 `# noqa` comment in 1 file."


def test_a_file_changed_since_it_was_read_is_left_alone_and_reported(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(HAZARD)
    config = Config(root=str(tmp_path))
    result = lint_path(str(path), config)
    assert result.findings and isinstance(result.source, Source)
    path.write_text(HAZARD + "# edited meanwhile\n")
    [after], added = add_noqa([result], config)
    assert after.error.reason == "# noqa not added: file changed since it was read; left alone"
    assert (added.comments, added.files) == (0, 0)
    assert path.read_text() == HAZARD + "# edited meanwhile\n"


def test_not_with_fix_diff_or_stdin(cli, tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    for extra in (["--fix"], ["--diff"], ["--unsafe-fixes"]):
        assert cli("check", str(tmp_path), "--add-noqa", *extra).code == 2
    assert cli("fix", str(tmp_path), "--add-noqa").code == 2
    assert cli("check", "-", "--add-noqa", stdin=HAZARD.encode()).code == 2
    assert (tmp_path / "a.py").read_text() == HAZARD


def test_add_noqa_as_a_process(tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    result = run_process("check", "--add-noqa", "-q", str(tmp_path))
    assert (result.returncode, result.stdout) == (0, b"")
    assert "# noqa: DTL101" in (tmp_path / "a.py").read_text()


def test_machine_formats_stay_parsable(cli, tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    result = cli("check", str(tmp_path), "--add-noqa", "--no-cache", "--output-format", "json")
    assert result.json() == []
    assert result.err == "Added 1 `# noqa` comment in 1 file.\n"


def test_a_file_that_cannot_be_read_is_reported(cli, tmp_path):
    (tmp_path / "gone.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "a.py").write_text(HAZARD)
    result = cli("check", str(tmp_path / "gone.py"), str(tmp_path / "a.py"), "--add-noqa", "--no-cache")
    assert result.code == 2
    assert "gone.py: error: cannot read" in result.err
    assert not (tmp_path / "missing.py").exists()
    assert result.out.splitlines()[-1] == "Added 1 `# noqa` comment in 1 file."
