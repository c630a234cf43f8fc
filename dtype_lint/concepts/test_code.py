"""Test code: where a float32, a lambda or a cast is the test's own choice, so the rules
that say so report nothing (a test pickles what it builds only on purpose, and a
process it starts is still reported by the process rules)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dtype_lint.core.deferred import cst
from dtype_lint.core.rule import Check

if TYPE_CHECKING:
    import ast

    from dtype_lint.core.context import FileContext
    from dtype_lint.core.options import Options

_TEST_IMPORT = re.compile(r"^\s*(?:import|from)\s+(?:pytest|unittest|absl\.testing|hypothesis)\b", re.MULTILINE)


def is_test(text: str, path: str) -> bool:
    """Test code: a file named ``test_*.py``/``*_test.py``/``conftest.py``, or one that
    imports a test framework."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or bool(_TEST_IMPORT.search(text)))


def in_test_code(ctx: FileContext) -> bool:
    """Whether the traversal stands in test code: a test file, a ``test*`` function or a
    test class."""
    if ctx.fact("test file", lambda: is_test(ctx.text, ctx.path or "")):
        return True
    return any(isinstance(scope.node, cst.FunctionDef) and scope.name.startswith("test") for scope in ctx.scopes) or any(
        info.name.startswith("Test") or info.name.endswith(("Test", "TestCase"))
        or any(b.endswith("TestCase") for b in info.bases) for info in ctx.classes)


def file_facts(tree: ast.Module, text: str, options: Options, path: str) -> bool:
    """What test code reads of the whole file (for incremental linting)."""
    return is_test(text, path)


TEST_CODE = Check("test code (its dtypes and objects are the test's own choice)",
                  lambda ctx, options, hit: in_test_code(ctx), file_facts)
