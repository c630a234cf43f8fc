"""Positions found statement by statement equal LibCST's whole-module positions."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from dtype_lint.engine import _positions, _statement_lines

FIXTURES = sorted((Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py"))
LAYOUTS = {
    "header comments and blank lines": "# a\n\n# b\n\nimport torch\n\n\nx = 1; y = torch.float32\n",
    "decorators and a docstring": '"""doc"""\n@a\n@b(\n  1)\ndef f(x=torch.float32):\n    return x\n',
    "continuations": "x = (1,\n     2)\ny = \\\n  3\nclass A:\n    z = [\n  4]\n",
    "several statements on a line": "a = 1; b = 2; c = 3\nif a: d = 4\nelse: d = 5\n",
    "no trailing newline": "def f():\n    return torch.float32",
    "tabs and form feeds": "if x:\n\ty = 1\n\x0c\nz = 2\n",
}


def _cases() -> list[tuple[str, str]]:
    return list(LAYOUTS.items()) + [(p.name, p.read_text(encoding="utf-8")) for p in FIXTURES]


@pytest.mark.parametrize("name,source", _cases(), ids=[name for name, _ in _cases()])
def test_statement_positions_equal_whole_module(name: str, source: str) -> None:
    module = cst.parse_module(source)
    assert _statement_lines(module, source) is not None  # not the whole-module fallback
    whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    by_statement = _positions(module, source, set(range(len(module.body))))
    checked = 0
    for statement in module.body:
        for node in _descendants(statement):
            if node in whole:
                assert by_statement(node) == whole[node], (name, type(node).__name__)
                checked += 1
    assert checked > 0


def _descendants(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _descendants(child)
