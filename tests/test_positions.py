"""Positions found per statement (or per class member) equal LibCST's whole-module ones."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from dtype_lint.core.engine import _positions, _reduce, _statement_lines
from dtype_lint.core.traversal import descendants

# Every fixture file that holds findings (the multi-file package's other files hold none).
FIXTURES = sorted(p for p in (Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py")
                  if "# expect:" in p.read_text(encoding="utf-8"))
LAYOUTS = {
    "header comments and blank lines": "# a\n\n# b\n\nimport torch\n\n\nx = 1; y = torch.float32\n",
    "decorators and a docstring": '"""doc"""\n@a\n@b(\n  1)\ndef f(x=torch.float32):\n    return x\n',
    "continuations": "x = (1,\n     2)\ny = \\\n  3\nclass A:\n    z = [\n  4]\n",
    "class members": (
        "@dec\nclass A(B):\n    '''doc'''\n\n    # c\n    x: int = 1; y = 2\n\n    @property\n"
        "    def f(self,\n          a=torch.float32):\n        return (a,\n  b)\n    class C: pass\n"
    ),
    "several statements on a line": "a = 1; b = 2; c = 3\nif a: d = 4\nelse: d = 5\n",
    "no trailing newline": "def f():\n    return torch.float32",
    "tabs and form feeds": "if x:\n\ty = 1\n\x0c\nz = 2\n",
}


def _cases() -> list[tuple[str, str]]:
    return list(LAYOUTS.items()) + [(p.name, p.read_text(encoding="utf-8")) for p in FIXTURES]


@pytest.mark.parametrize("name,source", _cases(), ids=[name for name, _ in _cases()])
def test_positions_equal_whole_module(name: str, source: str) -> None:
    module = cst.parse_module(source)
    assert _statement_lines(module, source) is not None  # not the whole-module fallback
    whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    # Every node of every statement: each statement is placed whole.
    wanted = {i: [n for n in _descendants(s) if n in whole] for i, s in enumerate(module.body)}
    # Code nodes inside classes' members only (what rules report): the class header and
    # those members are placed.
    members = {i: [n for m in s.body.body for n in descendants(m)]
               for i, s in enumerate(module.body) if isinstance(s, cst.ClassDef)}
    lines = _statement_lines(module, source)
    for i, nodes in members.items():  # split, not placed whole
        _, anchors = _reduce(module.body[i], lines[i][1], lines[i][0], nodes)
        assert len(anchors) > 1 and not anchors[-1][2]
    checked = 0
    for nodes_by_statement in (wanted, members):
        found = _positions(module, source, nodes_by_statement)
        for nodes in nodes_by_statement.values():
            for node in nodes:
                assert found(node) == whole[node], (name, type(node).__name__)
                checked += 1
    assert checked > 0


def _descendants(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _descendants(child)
