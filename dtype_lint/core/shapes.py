"""The syntax a finding needs, checked on CPython's ``ast`` before LibCST sees a unit.

The prefilter's text triggers (:mod:`dtype_lint.core.prefilter`) are cheap but broad: nearly
every function of a model file mentions ``dtype`` or ``float32`` somewhere. A unit whose
text passes a trigger is kept only if it also holds the *shape* the rule reports: a
parameter or field named like a compute dtype with a float32 default (DTL101), a
``.get``/``getattr``/``or``/conditional whose fallback spells float32 (DTL102), a forward
method that pins float32 and may not cast back (DTL103), a tensor
built on an input's device or cast and combined in float32 (DTL104), a tree map whose
function casts (DTL301), an attribute store or a ``forward`` replacement (DTL204), a cast
whose receiver may be a module (DTL303).

Every check over-approximates its rule: a dtype counts when the source lines of the
expression pass the same text test as the trigger, so anything a rule resolves (an
import alias is made visible by the prefilter's tainted names) is still kept.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import re
from typing import Callable, Iterable, Sequence

from dtype_lint.frameworks.casts import CAST_METHODS, TYPE_CAST_METHODS

TextTest = Callable[[str], bool]

# The last part of every name in DTL301's TREE_MAPS (an alias is a tainted name).
_TREE_MAP_NAMES = frozenset({"tree_map", "map", "tree_map_with_path", "map_with_path"})
LEAF_CAST = re.compile(r"astype|\.\s*to\s*\(|\.\s*view\s*\(|array\s*\(")


def lines_of(node: ast.AST, lines: Sequence[str]) -> str:
    """The whole source lines an expression spans (a superset of its own text)."""
    return "\n".join(lines[node.lineno - 1:node.end_lineno])  # type: ignore[attr-defined]


def text_of(node: ast.AST, lines: Sequence[str]) -> str:
    """An expression's own text when it lies on one line, else its whole lines."""
    if node.lineno != node.end_lineno:  # type: ignore[attr-defined]
        return lines_of(node, lines)
    line = lines[node.lineno - 1]  # type: ignore[attr-defined]
    start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    # ast's columns count UTF-8 bytes.
    return line[start:end] if line.isascii() else line.encode("utf-8")[start:end].decode("utf-8", "replace")


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
    """DTL102: ``d.get(k, f32)``, ``getattr(o, n, f32)``, ``x or f32``, ``low if c else f32``
    or an ``if``/``else`` that assigns a low precision, else float32, where the test
    compares a value (``==``, ``!=``, ``in``, ``not in``)."""
    for node in index(ast.Call, ast.BoolOp, ast.IfExp, ast.If):
        candidates: Sequence[ast.AST] = ()
        if isinstance(node, ast.Call):
            values = [*node.args, *(k.value for k in node.keywords)]
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "get" and len(values) == 2:
                candidates = values  # LibCST counts keywords as arguments, in source order
            elif isinstance(func, ast.Name) and func.id == "getattr" and len(values) == 3:
                candidates = values[1:]  # an alias of getattr resolves to another name
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            candidates = node.values[1:]  # LibCST nests `a or b or c`: each right operand
        elif isinstance(node, ast.IfExp):
            if _lookup(node.test, lines) and _LOW.search(lines_of(node.body, lines)):
                candidates = (node.orelse,)
        elif isinstance(node, ast.If) and node.orelse and _lookup(node.test, lines):
            body, orelse = node.body[0], node.orelse[0]
            if (isinstance(orelse, ast.Assign) and isinstance(body, ast.Assign)
                    and _LOW.search(lines_of(body.value, lines))):
                candidates = (orelse.value,)
        if any(_may_spell_dtype(c) and f32(text_of(c, lines)) for c in candidates):
            return True
    return False


def _may_spell_dtype(node: ast.AST) -> bool:
    """Whether dtypes.dtype_name can name a dtype for this node: a string, a name, an
    attribute, or a ``*.dtype(...)`` call (an alias of one is the prefilter's)."""
    if isinstance(node, ast.Call):
        func = node.func
        return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) == "dtype"
    return isinstance(node, (ast.Name, ast.Attribute)) or (isinstance(node, ast.Constant) and isinstance(
        node.value, str))


# What may spell float16 or bfloat16 (dtypes.LOW_PRECISION); aliases are the prefilter's.
_LOW = re.compile(r"float16|half")


def _lookup(test: ast.AST, lines: Sequence[str]) -> bool:
    """Whether the DTL102 rule may take the test for a precision lookup: it compares a
    value, and is not (as far as one line shows) a check of an input's ``.dtype``."""
    one_line = test.lineno == test.end_lineno  # type: ignore[attr-defined]
    return _compares_value(test) and not (one_line and ".dtype" in text_of(test, lines))


def _compares_value(test: ast.AST) -> bool:
    """As the DTL102 rule's test: a comparison by ==, !=, in or not in, at any depth of
    ``and``/``or``/``not``."""
    if isinstance(test, ast.Compare):
        return any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in test.ops)
    if isinstance(test, ast.BoolOp):
        return any(_compares_value(value) for value in test.values)
    if isinstance(test, ast.UnaryOp):
        return _compares_value(test.operand)
    return False


def pinned_in_forward(index: Index, lines: Sequence[str], f32: TextTest) -> bool:
    """DTL103: a forward method (``forward*``, ``__call__``) with a call whose argument
    spells float32, unless it certainly casts back (then the rule reports nothing in it)."""
    for function in index(ast.FunctionDef, ast.AsyncFunctionDef):
        if not (function.name.startswith("forward") or function.name == "__call__"):
            continue
        calls = [node for node in ast.walk(function) if isinstance(node, ast.Call)]
        if any(f32(lines_of(arg, lines)) for call in calls for arg in (*call.args, *call.keywords)):
            if not _casts_back(function, calls, lines, f32):
                return True
    return False


def _casts_back(function: ast.AST, calls: list[ast.Call], lines: Sequence[str], f32: TextTest) -> bool:
    """Whether DTL103 certainly finds this forward casting back to the input's precision:
    ``.type_as(...)``, or a dtype argument that names a dtype and cannot be float32. A
    class defined inside may have a forward of its own: then nothing is certain."""
    if any(isinstance(node, ast.ClassDef) for node in ast.walk(function)):
        return False
    for call in calls:
        method = call.func.attr if isinstance(call.func, ast.Attribute) else None
        if method == "type_as":
            return True
        dtype = next((k.value for k in call.keywords if k.arg == "dtype"), None)
        if dtype is None and method in TYPE_CAST_METHODS and call.args and not isinstance(call.args[0], ast.Starred):
            dtype = call.args[0]
        if dtype is not None and not f32(lines_of(dtype, lines)) and any(
                "dtype" in (node.id if isinstance(node, ast.Name) else node.attr).lower()
                for node in ast.walk(dtype) if isinstance(node, (ast.Name, ast.Attribute))):
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
                        and operand.func.attr in TYPE_CAST_METHODS and f32(lines_of(operand, lines))):
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


def callable_store(index: Index, lines: Sequence[str], own: ast.AST | None, names: Callable[[], Names]) -> bool:
    """DTL204: an attribute of ``self`` or of what may be a module assigned a lambda, a
    ``partial``, a wrapper of ``forward``, or a name this unit binds to one of those or
    defines as a function or class (``own``, the unit's own function, is not local to
    itself)."""
    local = {n.name for n in index(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) if n is not own}
    for node in index(ast.Assign):
        if isinstance(node.value, (ast.Lambda, ast.Call, ast.Name)):
            local.update(t.id for t in node.targets if isinstance(t, ast.Name))
    stores = [(target.value, node.value) for node in index(ast.Assign) for target in node.targets
              if isinstance(target, ast.Attribute) and _may_be_callable(node.value, local, lines)]
    if not stores:
        return False
    known = names()
    return any((isinstance(owner, ast.Name) and owner.id == "self") or _may_be_module(owner, known, 0)
               for owner, _ in stores)


def _may_be_callable(value: ast.AST, local: set[str], lines: Sequence[str]) -> bool:
    if isinstance(value, ast.IfExp):
        return _may_be_callable(value.body, local, lines) or _may_be_callable(value.orelse, local, lines)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name == "partial" or "forward" in lines_of(value, lines)
    return isinstance(value, ast.Lambda) or (isinstance(value, ast.Name) and value.id in local)


@dataclasses.dataclass
class Names:
    """What DTL303 resolves a name through, over-approximated for a whole file: every
    import (local name -> qualified names), every class name, and every binding (an
    assignment's value, a parameter's annotation) that a unit can see: its own and
    those outside functions."""

    aliases: dict[str, set[str]]
    classes: frozenset[str]
    bindings: dict[str, list[ast.AST]]
    module_bases: frozenset[str]  # qualified names that make a class a torch module
    module_names: tuple[str, ...]  # receiver names taken to be modules (`module-names`)

    def add(self, nodes: Iterable[ast.AST]) -> "Names":
        """These names plus the imports and bindings among ``nodes`` (a unit's)."""
        aliases = {name: set(qualified) for name, qualified in self.aliases.items()}
        bindings = {name: list(values) for name, values in self.bindings.items()}
        collect(nodes, aliases, bindings)
        return dataclasses.replace(self, aliases=aliases, bindings=bindings)


def collect(nodes: Iterable[ast.AST], aliases: dict[str, set[str]], bindings: dict[str, list[ast.AST]]) -> None:
    """Imports and bindings as FileContext records them (a superset: every scope at once)."""
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                aliases.setdefault(local, set()).add(alias.name if alias.asname else local)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                aliases.setdefault(alias.asname or alias.name, set()).add(f"{node.module or ''}.{alias.name}")
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bindings.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            bindings.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
            bindings.setdefault(node.optional_vars.id, []).append(node.context_expr)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            bindings.setdefault(node.arg, []).append(node.annotation)


def module_cast(index: Index, names: Callable[[], Names]) -> bool:
    """DTL303: a cast (``.half()``, ``.to(...)``...) whose receiver may be a module, a cast
    stored under a module's name, or a parameter replaced by a recast copy; ``names``
    gives the imports, classes and bindings the unit sees (asked only when it casts)."""
    receivers = [receiver for call in index(ast.Call) if (receiver := _cast_receiver(call)) is not None]
    if not receivers:
        return False
    known = names()
    if any(_may_be_module(receiver, known, 0) for receiver in receivers):
        return True
    for node in index(ast.Assign):
        value = node.value
        if len(node.targets) != 1 or not isinstance(value, ast.Call):
            continue
        if _cast_receiver(value) is not None and _may_be_module(node.targets[0], known, 0):
            return True
        # LibCST's first argument may be a keyword one (`Parameter(data=w.half())`).
        first = next(iter([*value.args, *(k.value for k in value.keywords)]), None)
        if _parameter(value.func, known) and isinstance(first, ast.Call) and _cast_receiver(first) is not None:
            return True
    return False


def _parameter(func: ast.AST, names: Names) -> bool:
    """Whether a callee may be torch's ``Parameter`` (under an alias too)."""
    if isinstance(func, ast.Attribute):
        return func.attr == "Parameter"
    return isinstance(func, ast.Name) and any(
        q.rsplit(".", 1)[-1] == "Parameter" for q in names.aliases.get(func.id, set()) | {func.id})


def _cast_receiver(call: ast.Call) -> ast.AST | None:
    """The receiver of what may be a cast (rules.patterns.cast_target, without its dtype test)."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in CAST_METHODS and not call.args and not call.keywords:
        return func.value
    if func.attr in TYPE_CAST_METHODS and (call.args or call.keywords):
        return func.value
    return None


def _may_be_module(expr: ast.AST, names: Names, depth: int) -> bool:
    """Whether rules.patterns.module_kind may find ``expr`` to be a module."""
    if depth > 6:
        return True  # a chain of bindings too long to follow: keep the unit
    if isinstance(expr, ast.Call):
        return _module_type(expr.func, names)
    if isinstance(expr, ast.Name):
        if expr.id == "self" or _named_module(expr.id, names):
            return True
        return any(
            (isinstance(value, (ast.Name, ast.Attribute)) and _module_type(value, names))
            or _may_be_module(value, names, depth + 1)
            for value in names.bindings.get(expr.id, ())
        )
    return (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"
            and _named_module(expr.attr, names))


def _named_module(name: str, names: Names) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in names.module_names)


def _module_type(expr: ast.AST, names: Names) -> bool:
    """Whether a dotted name may resolve to a torch module class (rules.patterns._module_type)."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return False
    rest = ".".join(reversed(parts))
    for head in names.aliases.get(expr.id, set()) | {expr.id}:
        qualified = f"{head}.{rest}" if rest else head
        last = qualified.rsplit(".", 1)[-1]
        if qualified.startswith("torch.nn.") and last[:1].isupper() and not last.startswith("Parameter"):
            return True
        if (qualified in names.classes or qualified in names.module_bases or qualified.endswith("LightningModule")
                or qualified == "nn.Module"):
            return True
    return False
