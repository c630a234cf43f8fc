"""An incremental lint gives exactly a whole lint's findings: random edits (comments,
blank lines, statements, deleted and repeated lines) of every fixture, each linted both
ways; where the incremental lint declines (None), the caller lints the whole text, so
only its answers are compared. A table of edits inside each top-level function checks
that both of its kinds of change are taken, not only declined."""

from __future__ import annotations

import ast
import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import fixture_files
from dtype_lint.core.engine import LintError, lint_source
from dtype_lint.core.incremental import relint
from dtype_lint.project.config import Config
from dtype_lint.core.options import Options

RULES = Config(select=("ALL",)).rules()
OPTIONS = Options()
TEXTS = [path.read_text(encoding="utf-8") for path in fixture_files()]
STATEMENTS = [
    "pass",
    "x = torch.zeros(3, dtype=torch.float32)",
    "y = jax.tree_map(lambda p: p.astype(jnp.bfloat16), params)",
    "z = x.float()",
    "model.eval()",
    "return x.to(torch.float32)",
    "helper = lambda: 0",
    "dtype = torch.float32",
    "def inner(a, dtype=torch.float32):",
    "self.proj = nn.Linear(4, 4)",
    "loss.backward()",
]


@functools.lru_cache(maxsize=None)
def lint(text: str) -> list | None:
    try:
        return lint_source(text, "t.py", RULES, OPTIONS)
    except LintError:
        return None


def edited(text: str, line: int, kind: str, statement: str) -> str:
    lines = text.split("\n")
    line %= len(lines)
    indent = lines[line][: len(lines[line]) - len(lines[line].lstrip())]
    if kind == "delete":
        return "\n".join(lines[:line] + lines[line + 1:])
    new = {"comment": f"{indent}# a note", "blank": "", "repeat": lines[line], "statement": indent + statement}[kind]
    return "\n".join(lines[:line] + [new] + lines[line:])


def same_as_whole(old: str, new: str) -> bool | None:
    """Whether the incremental lint of ``new`` from ``old`` equals its whole lint; None
    where it declines (or the whole lint cannot be had)."""
    before, after = lint(old), lint(new)
    if before is None or after is None:
        return None
    got = relint(old, before, new, "t.py", RULES, OPTIONS)
    if got is None:
        return None
    assert got == after
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(TEXTS))), st.lists(st.tuples(
    st.integers(0, 10_000), st.sampled_from(["comment", "blank", "statement", "delete", "repeat"]),
    st.sampled_from(STATEMENTS)), min_size=1, max_size=3))
def test_random_edits_lint_as_a_whole_lint_does(index, edits):
    text = TEXTS[index]
    for line, kind, statement in edits:  # each edit linted from the text before it
        new = edited(text, line, kind, statement)
        same_as_whole(text, new)
        text = new


def function_bodies(text: str) -> list[tuple[int, str]]:
    """(first body line, 0-based; its indentation) of each top-level function."""
    out = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body[0].lineno > node.lineno:
            out.append((node.body[0].lineno - 1, " " * node.body[0].col_offset))
    return out


@pytest.mark.parametrize("kind", ["comment", "statement"])
def test_edits_inside_functions_are_linted_incrementally_and_as_a_whole(kind):
    taken = 0
    for text in TEXTS:
        for line, indent in function_bodies(text):
            for statement in STATEMENTS[:4]:
                new = edited(text, line, kind if kind == "comment" else "statement", statement)
                taken += same_as_whole(text, new) is True
    assert taken >= 10
