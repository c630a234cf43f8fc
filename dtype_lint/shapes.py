"""The syntax a finding needs, checked on CPython's ``ast`` before LibCST sees a unit.

The prefilter's text triggers (:mod:`dtype_lint.prefilter`) are cheap but broad: nearly
every function of a model file mentions ``dtype`` or ``float32`` somewhere. A unit whose
text passes a trigger is kept only if it also holds the *shape* the rule reports: a
parameter or field named like a compute dtype with a float32 default (DTL101), a
``.get``/``getattr``/``or``/conditional whose fallback spells float32 (DTL102), a tensor
built on an input's device or cast and combined in float32 (DTL104), a tree map whose
function casts (DTL301), an attribute store or a ``forward`` replacement (DTL204).

Every check over-approximates its rule: a dtype counts when the source lines of the
expression pass the same text test as the trigger, so anything a rule resolves (an
import alias is made visible by the prefilter's tainted names) is still kept.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Sequence

TextTest = Callable[[str], bool]

_CASTS = frozenset({"to", "astype", "type"})
# The last part of every name in DTL301's TREE_MAPS (an alias is a tainted name).
_TREE_MAP_NAMES = frozenset({"tree_map", "map", "tree_map_with_path", "map_with_path"})
LEAF_CAST = re.compile(r"astype|\.\s*to\s*\(|\.\s*view\s*\(|array\s*\(")


def lines_of(node: ast.AST, lines: Sequence[str]) -> str:
    """The whole source lines an expression spans (a superset of its own text)."""
    return "\n".join(lines[node.lineno - 1:node.end_lineno])  # type: ignore[attr-defined]


class Index:
    """The nodes of some statements by type, from one walk."""

    def __init__(self, nodes: Sequence[ast.AST]) -> None:
        # A plain stack over `_fields`: about twice as fast as ast.walk's generators.
        by_type: dict[type, list[ast.AST]] = {}
        stack = list(nodes)
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind in by_type:
                by_type[kind].append(node)
            else:
                by_type[kind] = [node]
            for name in node._fields:
                value = getattr(node, name, None)
                if type(value) is list:
                    stack.extend(v for v in value if isinstance(v, ast.AST))
                elif isinstance(value, ast.AST):
                    stack.append(value)
        self._by_type = by_type

    def __call__(self, *types: type) -> list:
        if len(types) == 1:
            return self._by_type.get(types[0], [])
        return [node for t in types for node in self._by_type.get(t, [])]


def compute_default(index: Index, lines: Sequence[str], names: frozenset[str], f32: TextTest) -> bool:
    """DTL101: a parameter, field or binding named in ``names`` whose value spells float32."""
    for node in index(ast.arguments):
        positional = [*node.posonlyargs, *node.args]
        pairs = list(zip(positional[len(positional) - len(node.defaults):], node.defaults))
        pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None]
        if any(arg.arg in names and f32(lines_of(default, lines)) for arg, default in pairs):
            return True
    for node in index(ast.Assign, ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if (node.value is not None and any(isinstance(t, ast.Name) and t.id in names for t in targets)
                and f32(lines_of(node.value, lines))):
            return True
    return False


def fallback(index: Index, lines: Sequence[str], f32: TextTest) -> bool:
    """DTL102: ``d.get(k, f32)``, ``getattr(o, n, f32)``, ``x or f32``, ``a if c else f32``,
    or an ``if``/``else`` whose ``else`` opens by assigning float32."""
    for node in index(ast.Call, ast.BoolOp, ast.IfExp, ast.If):
        candidate: ast.AST | None = None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "get" and len(node.args) == 2:
                candidate = node.args[1]
            elif len(node.args) == 3:  # getattr, possibly under an alias
                candidate = node.args[2]
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            candidate = node.values[-1]
        elif isinstance(node, ast.IfExp):
            candidate = node.orelse
        elif isinstance(node, ast.If) and node.orelse:
            candidate = node.orelse[0]
        if candidate is not None and f32(lines_of(candidate, lines)):
            return True
    return False


def pinned_beside_input(index: Index, lines: Sequence[str], f32: TextTest) -> bool:
    """DTL104: a call with ``dtype=`` float32 and ``device=<x>.device``, or a float32 cast
    that is an operand of arithmetic."""
    for node in index(ast.Call, ast.BinOp):
        if isinstance(node, ast.Call):
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            device, dtype = keywords.get("device"), keywords.get("dtype")
            if (isinstance(device, ast.Attribute) and device.attr == "device" and dtype is not None
                    and f32(lines_of(dtype, lines))):
                return True
        elif isinstance(node, ast.BinOp):
            for operand in (node.left, node.right):
                if (isinstance(operand, ast.Call) and isinstance(operand.func, ast.Attribute)
                        and operand.func.attr in _CASTS and f32(lines_of(operand, lines))):
                    return True
    return False


def tree_map_cast(index: Index, lines: Sequence[str], functions: Callable[[str], str]) -> bool:
    """DTL301: a tree map whose function (a lambda, a partial of one, or a function of this
    file, whose text ``functions`` returns) casts its leaves."""
    for node in index(ast.Call):
        if not node.args:
            continue
        func = node.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if last not in _TREE_MAP_NAMES:
            continue
        fn = node.args[0]
        while isinstance(fn, ast.Call) and fn.args:  # functools.partial(cast, ...)
            fn = fn.args[0]
        text = functions(fn.id) if isinstance(fn, ast.Name) else lines_of(fn, lines)
        if LEAF_CAST.search(text):
            return True
    return False


def callable_store(index: Index, lines: Sequence[str], own: ast.AST | None) -> bool:
    """DTL204: an attribute assigned a lambda, a ``partial``, a wrapper of ``forward``, or
    a name this unit binds to one of those or defines as a function or class (``own``,
    the unit's own function, is not local to itself)."""
    local = {n.name for n in index(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) if n is not own}
    for node in index(ast.Assign):
        if isinstance(node.value, (ast.Lambda, ast.Call, ast.Name)):
            local.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return any(
        any(isinstance(t, ast.Attribute) for t in node.targets) and _may_be_callable(node.value, local, lines)
        for node in index(ast.Assign)
    )


def _may_be_callable(value: ast.AST, local: set[str], lines: Sequence[str]) -> bool:
    if isinstance(value, ast.IfExp):
        return _may_be_callable(value.body, local, lines) or _may_be_callable(value.orelse, local, lines)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name == "partial" or "forward" in lines_of(value, lines)
    return isinstance(value, ast.Lambda) or (isinstance(value, ast.Name) and value.id in local)
