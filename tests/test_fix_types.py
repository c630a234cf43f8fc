"""DTL101's fix leaves code that type-checks: real mypy runs on the fixed files (torch is
described by a small stub, so that mypy knows `torch.dtype` without torch installed)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

STUB = {
    "torch/__init__.pyi": "from . import nn as nn\nclass dtype: ...\nfloat32: dtype\n"
                          "class Tensor:\n    def to(self, dtype: dtype | None = ...) -> Tensor: ...\n",
    "torch/nn/__init__.pyi": "class Module:\n    def __init__(self) -> None: ...\n",
}
LAYERS = '''\
    """Layers."""
    from __future__ import annotations

    import torch
    from torch import nn


    def scale(x: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return x.to(dtype)


    class Block(nn.Module):
        dtype: torch.dtype = torch.float32

        def __init__(self, width: int, dtype: torch.dtype = torch.float32) -> None:
            super().__init__()
            self.width = width
            self.compute = dtype
    '''


def mypy(folder) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(folder / ".mypy"),
         "--python-version", "3.10", "--show-error-codes", "--no-error-summary", "."],
        cwd=folder, capture_output=True, text=True, timeout=300, env={"MYPYPATH": str(folder / "stubs"), "PATH": ""},
    )
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


@pytest.fixture
def project(tmp_path):
    for path, text in STUB.items():
        (tmp_path / "stubs" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "stubs" / path).write_text(text)
    return tmp_path


def write(folder, name: str, text: str) -> None:
    (folder / name).write_text(textwrap.dedent(text))


@pytest.mark.parametrize(("pyproject", "annotation", "imported"), [
    ("", "torch.dtype | None", False),  # 3.10 by default
    ('[project]\nrequires-python = ">=3.9"\n', "Optional[torch.dtype]", True),
    ('[project]\nrequires-python = ">=3.9"\n[tool.dtype-lint]\ntarget-version = "py311"\n', "torch.dtype | None", False),
])
def test_fixed_parameters_and_fields_type_check(cli, project, pyproject, annotation, imported):
    write(project, "pyproject.toml", pyproject + "[tool.dtype-lint]\n" * ("tool.dtype-lint" not in pyproject))
    write(project, "layers.py", LAYERS)
    # what the fix wrote before: mypy must reject it, or this test could not fail
    write(project, "old_fix.py", LAYERS.replace("= torch.float32", "= None"))
    assert mypy(project).count("[assignment]") == 3
    (project / "old_fix.py").unlink()

    result = cli("check", "--no-cache", "--fix", "--unsafe-fixes", "layers.py", cwd=project)
    fixed = (project / "layers.py").read_text()
    assert result.code == 0 and "float32" not in fixed
    assert fixed.count(f"dtype: {annotation} = None") == 3
    assert fixed.count("from typing import Optional\n") == imported
    assert mypy(project) == ""


def test_a_file_that_writes_optional_keeps_its_style_and_imports(cli, project):
    write(project, "pyproject.toml", "[tool.dtype-lint]\n")
    write(project, "layers.py", "from typing import Optional\n" + textwrap.dedent(LAYERS)
          + "\n\ndef width(block: Optional[Block]) -> int:\n    return block.width if block else 0\n")
    cli("check", "--no-cache", "--fix", "--unsafe-fixes", "layers.py", cwd=project)
    fixed = (project / "layers.py").read_text()
    assert fixed.count("dtype: Optional[torch.dtype] = None") == 3
    assert fixed.count("Optional\n") == 1  # the one import, not a second
    assert mypy(project) == ""


def test_an_annotation_that_admits_none_is_left_as_it_is(cli, project):
    write(project, "pyproject.toml", "[tool.dtype-lint]\n")
    write(project, "layers.py", LAYERS.replace("dtype: torch.dtype = torch.float32", "dtype: torch.dtype | None = torch.float32"))
    cli("check", "--no-cache", "--fix", "--unsafe-fixes", "layers.py", cwd=project)
    assert (project / "layers.py").read_text().count("dtype: torch.dtype | None = None") == 3
    assert mypy(project) == ""


def test_a_target_version_that_is_not_a_version_is_a_config_error(cli, project):
    write(project, "pyproject.toml", '[tool.dtype-lint]\ntarget-version = "3.9"\n')
    result = cli("check", "--no-cache", str(project))
    assert result.code == 2 and "'target-version'" in result.err
