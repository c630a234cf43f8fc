"""What the pickling rules' prefilters share: where a value followed by
:mod:`dtype_lint.core.flow` may start or end outside the unit that holds the sink.

The flow follows a value across units in three ways the unit's own text does not show:
a name bound elsewhere (the prefilter follows names bound outside functions, and keeps
the units binding a kept unit's names), a function of the file called as a factory or a
generator (kept by name; ``BODY_WORDS`` keeps its body), and ``self.attr`` stored in
another method of the class (``stores_on_self`` keeps the storing method wherever the
file holds the rule's sink words).
"""

from __future__ import annotations

import ast
import re
from typing import Sequence

from dtype_lint.core.shapes import Syntax

# A function kept as context keeps its body when it may make a source: a lambda, a
# partial, or a yield (a generator function); nested definitions keep it anyway.
BODY_WORDS = re.compile(r"\blambda\b|partial|\byield\b")

_last: list = [None, ""]


def file_text(lines: Sequence[str]) -> str:
    """The whole file's text, joined once per file."""
    if _last[0] is not lines:
        _last[0], _last[1] = lines, "\n".join(lines)
    return _last[1]


def stores_on_self(u: Syntax) -> bool:
    """Whether the unit stores something on an attribute of its first parameter (``self``)
    or through ``setattr``: another method may send it to a sink."""
    for node in u.index(ast.Assign):
        if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) for t in node.targets):
            return True
    return any(isinstance(c.func, ast.Name) and c.func.id == "setattr" for c in u.index(ast.Call))


_NESTED = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]", re.MULTILINE)
# Names of parameters that may hold a generator (core.flow's _holds_generator).
GENERATOR_PARAM = re.compile(r"(?:^|_)gen(?:erator)?$")
GENERATOR_WORDS = re.compile(r"\bgen\b|_gen\b|generator|Generator|Iterator|\byield\b")


def may_make_source(text: str, lc: bool, u: Syntax | None, via_self: bool = True) -> bool:
    """Whether the unit may hold a value the flow takes for a source, beyond the
    prefilter's local-callable test ``lc``: a generator (expression, parameter, or a
    generator function's call), ``self.attr`` (stored by another method; not with
    ``via_self=False``), or a call of a function of the file that may return a local
    function. Without the unit's syntax, any call counts."""
    if lc or (via_self and "self" in text) or GENERATOR_WORDS.search(text):
        return True
    if u is None:
        return "(" in text
    if u.index(ast.GeneratorExp):
        return True
    return any(factory_call(call, u) for call in u.index(ast.Call))


def factory_call(call: ast.Call, u: Syntax) -> bool:
    """A call of a function of the file (or of a method through ``self``) that may return a
    local function or a generator."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        body = u.function_text(func.attr)
    elif isinstance(func, ast.Name):
        body = u.function_text(func.id)
    else:
        return False
    return bool(body) and bool(BODY_WORDS.search(body) or len(_NESTED.findall(body)) > 1)


def returns_local(lc: bool, u: Syntax | None) -> bool:
    """Whether the unit is a function (a method) that returns a lambda or a function or
    class it defines: the flow follows ``self.method()`` calls there, and a name that only
    an attribute mentions keeps no unit as context."""
    if not lc or u is None or not isinstance(u.nodes[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    own = u.nodes[0]
    local = {n.name for n in u.index(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) if n is not own}
    return any(isinstance(n, ast.Lambda) or (isinstance(n, ast.Name) and n.id in local)
               for r in u.index(ast.Return) if r.value is not None for n in ast.walk(r.value))


def callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
