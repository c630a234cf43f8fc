"""The read-only walk visits what libcst.visit_batched visits, in the same order."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from dtype_lint.rules.registry import RULES
from dtype_lint.core.traversal import child_fields, walk

# Every fixture file that holds findings (the multi-file package's other files hold none).
FIXTURES = sorted(p for p in (Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py")
                  if "# expect:" in p.read_text(encoding="utf-8"))
# Every kind of code node that can hold another: decorators, defaults, annotations,
# comprehensions, match, walrus, f-strings, star-args, async, type parameters.
RICH = '''
import torch as t, numpy as np
from a.b import (c as d, e)

@dec(1)
@other
async def f(x: int = 1, *args: "T", y=lambda z=2: z, **kw) -> list[int]:
    async with a as (b, c), d:
        async for i in g(x):
            await h(i)
    return [j async for j in k if j] + {m: n for m, n in o.items()} + [*p, *(q or r)]

class C(Base, metaclass=M):
    """doc"""
    a: int = 1
    b = c = (lambda: 0)()
    def g(self, /, a, *, b=t.float32):
        global q
        if (w := a) and not b or c is None:
            del self.x[1:2:3], y
        elif b:
            raise E from F
        else:
            try:
                assert x, f"{a!r:>{width}} {b}"
            except (A, B) as e:
                pass
            finally:
                yield from z
        match point:
            case Point(x=0, y=[1, *rest]) | {"k": v, **kw} if v > 0:
                pass
            case _:
                return x if y else -z ** 2 @ w
        with open(p) as fh: fh.read(); x += 1
        while True:
            break
        for a, (b, c) in d:
            continue
        else:
            nonlocal_ = ~a << 2
'''


class Recorder(cst.BatchableCSTVisitor):
    """Records every visit and leave of the nodes that carry code."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str, int]] = []


def _recording(name: str):
    def visit(self, node):
        self.events.append(("visit", name, id(node)))

    def leave(self, node):
        self.events.append(("leave", name, id(node)))

    # LibCST finds visitor methods by their __name__.
    visit.__name__, leave.__name__ = f"visit_{name}", f"leave_{name}"
    return visit, leave


# Code nodes only: the walk skips the whitespace, brackets and punctuation between them.
_CODE_NODES = [
    name for name in dir(cst)
    if isinstance(getattr(cst, name), type) and issubclass(getattr(cst, name), cst.CSTNode)
    and hasattr(getattr(cst, name), "_visit_and_replace_children")
    and not issubclass(getattr(cst, name), (cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.Newline,
                                            cst.TrailingWhitespace, cst.Comment, cst.Comma, cst.LeftParen,
                                            cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
                                            cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Semicolon,
                                            cst.AssignEqual, cst.Colon, cst.Dot, cst.ImportStar,
                                            cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp,
                                            cst.BaseUnaryOp, cst.BaseAugOp, cst.Asynchronous,
                                            cst.ParenthesizedWhitespace, cst.SimpleWhitespace))
]
for _name in _CODE_NODES:
    _visit, _leave = _recording(_name)
    setattr(Recorder, f"visit_{_name}", _visit)
    setattr(Recorder, f"leave_{_name}", _leave)


def _sources() -> list[tuple[str, str]]:
    out = [("rich", RICH)]
    out += [(path.name, path.read_text(encoding="utf-8")) for path in FIXTURES]
    out += [(f"{rule.doc.code} example {i}", code)
            for rule in RULES for i, code in enumerate([*rule.valid, *(inv.code for inv in rule.invalid)])]
    return out


@pytest.mark.parametrize("name,source", _sources(), ids=[name for name, _ in _sources()])
def test_walk_matches_libcst_order(name: str, source: str) -> None:
    module = cst.parse_module(source)
    expected, got = Recorder(), Recorder()
    hooks: list[list[tuple[str, int]]] = [[], []]
    cst.visit_batched(module, [expected],
                      before_visit=lambda n: hooks[0].append(("enter", id(n))) if isinstance(n, cst.Name) else None,
                      after_leave=lambda n: hooks[0].append(("leave", id(n))) if isinstance(n, cst.Name) else None)
    for _ in walk(module.body, [got], ((cst.Name,), lambda n: hooks[1].append(("enter", id(n)))),
                  ((cst.Name,), lambda n: hooks[1].append(("leave", id(n))))):
        pass
    # The module node itself is not walked (the engine walks its statements).
    expected_events = [e for e in expected.events if e[1] != "Module"]
    assert got.events == expected_events
    assert len(got.events) > 0
    assert hooks[0] == hooks[1]


def test_child_fields_skip_only_punctuation() -> None:
    fields = child_fields(cst.FunctionDef)
    assert fields[0] == "decorators" and fields[-1] == "body" and "params" in fields
    assert not any(f.startswith("whitespace") or f in ("leading_lines", "lines_after_decorators") for f in fields)
    assert "lpar" not in child_fields(cst.Call) and "args" in child_fields(cst.Call)


def test_visitor_methods_must_name_a_node() -> None:
    class Bad(cst.BatchableCSTVisitor):
        def visit_Call_func(self, node) -> None: ...

    with pytest.raises(TypeError, match="only visit_<Node>"):
        list(walk([cst.parse_statement("f(x)\n")], [Bad()]))
