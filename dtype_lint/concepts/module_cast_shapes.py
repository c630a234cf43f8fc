"""The shapes of a module's cast, checked on CPython's ``ast`` by the prefilter: an
over-approximation of :mod:`dtype_lint.concepts.module_casts` (a cast whose receiver may be
a module, a loop that sets each parameter's ``.data``, a call that may hand a module to a
function that casts it, which the project model's summaries answer)."""

from __future__ import annotations

import ast
import bisect
import re
from typing import Callable

from dtype_lint.concepts.module_shapes import module_type, named_module
from dtype_lint.concepts.modules import DEVICE_MOVES, factory_name, key_of, models_path, module_keys
from dtype_lint.core.model.finder import standard_library
from dtype_lint.core.model.summary import has_star_import, module_statements, rebinding
from dtype_lint.core.shapes import Index, Names, Syntax, device_like, qualified_names
from dtype_lint.frameworks.bases import unread
from dtype_lint.frameworks.casts import CAST_METHODS, TYPE_CAST_METHODS

# `p.data = ...`: what a loop that recasts parameters one at a time does.
PARAMETER_LOOP = re.compile(r"\.\s*data\s*=(?!=)")


def _data_in_loop(index: Index) -> bool:
    """A loop that sets its variable's ``.data`` (visit_For's shape)."""
    for loop in index(ast.For, ast.AsyncFor):
        names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        if any(isinstance(t, ast.Attribute) and t.attr == "data" and isinstance(t.value, ast.Name)
               and t.value.id in names for node in ast.walk(loop) if isinstance(node, ast.Assign)
               for t in node.targets):
            return True
    return False


def _helper_call(u: Syntax) -> bool:
    """A call that hands what may be a module to a function that casts that
    parameter (the project model's summaries of this file and the files it imports).
    Only calls of functions (by name, or through an import: ``utils.cast(m)``; not the
    methods of values) are asked about, and only for the arguments that may be modules."""
    file_names = u.file_names()
    calls = u.file_memo.get("helper calls")
    if calls is None:
        calls = u.file_memo["helper calls"] = _helper_calls(u.file_text, u.file_tree, file_names)
    # Text first: the lines of the file's calls whose head is an import of something
    # the model reads (not a framework it leaves unread, not the standard library) or a
    # function of the file, found once per file. Most units hold none, and need no
    # index. (A class's constructor is no casting helper the model follows: `CapWords`
    # names are left out.)
    first = min(n.lineno for node in u.nodes for n in (node, *getattr(node, "decorator_list", ())))
    last = max(node.end_lineno for node in u.nodes)
    at = bisect.bisect_left(calls, (first, ""))
    heads = {head for line, head in calls[at:bisect.bisect_right(calls, (last, "\uffff"))]}
    if not heads:
        return False
    names: Names | None = None
    for call in u.index(ast.Call):
        root = _ast_root(call.func)
        last = call.func.attr if isinstance(call.func, ast.Attribute) else root.id if isinstance(root, ast.Name) else ""
        if not isinstance(root, ast.Name) or last[:1].isupper() or root.id not in heads or (
                root.id not in file_names.aliases and not isinstance(call.func, ast.Name)):
            continue
        names = names or u.names()
        slots = [i for i, arg in enumerate(call.args) if not isinstance(arg, ast.Starred)
                 and _module_argument(arg, names, u)]
        slots += [k.arg for k in call.keywords if k.arg and _module_argument(k.value, names, u)]
        if slots and any(names.casting_function(q, slot) for q in qualified_names(call.func, names) for slot in slots):
            return True
    return False


def _helper_calls(text: str, tree: ast.Module | None, names: Names) -> list[tuple[int, str]]:
    """(line, head) of each call in ``text`` whose head may name a function the project
    model reads (an import of a module it reads, or a function the file defines at its
    top level or binds there to another name, which the model summarises; with a star
    import, any function the file defines, whose name a star-imported one may share),
    sorted. Each head is looked for as a literal: far faster than a regex for every call."""
    if tree is None:
        defined = set(_DEFINED.findall(text)) | set(_REBOUND.findall(text))
    else:
        statements = list(module_statements(tree.body))
        defined = {s.name for s in statements if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))} | {
            bound[0] for s in statements if (bound := rebinding(s)) is not None}
        if has_star_import(text):
            defined |= set(_DEFINED.findall(text))
    heads = defined | {head for head, qualified in names.aliases.items()
                       if any(not unread(q) and not standard_library(q) for q in qualified)}
    found: list[tuple[int, str]] = []  # (offset, head)
    for head in heads:
        position = text.find(head)
        while position >= 0:
            end = position + len(head)
            tail = _CALL_TAIL.match(text, end)
            if tail and (position == 0 or not (text[position - 1].isalnum() or text[position - 1] in "._")) and not (
                    text.endswith(("def ", "class "), 0, position)) and not (head + tail.group(1)).rsplit(
                    ".", 1)[-1][:1].isupper():
                found.append((position, head))
            position = text.find(head, end)
    found.sort()
    lines, line, offset = [], 1, 0
    for position, head in found:
        line += text.count("\n", offset, position)
        offset = position
        lines.append((line, head))
    return lines


def _module_argument(arg: ast.AST, names: Names, u: Syntax) -> bool:
    """_may_be_module of a call's argument; for a name, answered once per unit (the same
    names are handed to many calls). ``self`` is a module only in a method of a class
    that may be one (the modules configuration sanitizes it elsewhere)."""
    if isinstance(arg, ast.Name) and arg.id == "self":
        return _self_may_be_module(u)
    if not isinstance(arg, ast.Name):
        return _may_be_module(arg, names, 0)
    key = ("may be a module", arg.id)
    if key not in u.memo:
        u.memo[key] = _may_be_module(arg, names, 0)
    return u.memo[key]


def _self_may_be_module(u: Syntax) -> bool:
    """Whether ``self`` in the unit may be a torch module: in a member of a top-level
    class, what its bases make it (where known); anywhere else, it may."""
    if u.owner is None or u.index(ast.ClassDef):
        return True
    kinds = u.names().class_kinds(u.owner.name)
    return kinds is None or "torch_module" in kinds


def _ast_root(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


# What follows a call's head: the rest of its dotted name, and an opening parenthesis.
_CALL_TAIL = re.compile(r"((?:\.[A-Za-z_]\w*)*)\s*\(")
# A function the file defines (at any depth; the model summarises its top-level ones).
_DEFINED = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)", re.MULTILINE)
# A name bound to a dotted name (`shrink = precision.lower_each`), at any depth.
_REBOUND = re.compile(r"^[ \t]*(\w+)[ \t]*=[ \t]*[A-Za-z_][\w.]*[ \t]*(?:#.*)?$", re.MULTILINE)


def _module_cast(index: Index, names: Callable[[], Names]) -> bool:
    """A cast (``.half()``, ``.to(...)``...) whose receiver may be a module, a cast
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


def _may_be_module(expr: ast.AST, names: Names, depth: int, seen: frozenset[str] = frozenset()) -> bool:
    """Whether concepts.modules.Modules.reason may find ``expr`` to be a module: what
    shapes.may_be_module accepts, plus copies, factories, device moves and receivers the
    file uses as modules (``concepts.modules.module_keys``). Each step here (a binding, a copy, a
    device move) is one step of module_reason, which gives up past depth 4; so does this.
    ``seen``: the names whose bindings are being followed; a name met again
    (``x = x.to(device)``) adds nothing that its other bindings do not."""
    if depth > 4:
        return False
    if isinstance(expr, ast.Call):
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if module_type(func, names) or factory_name(name) or _from_models(func, names):
            return True
        if name in ("deepcopy", "copy") and expr.args:
            return _may_be_module(expr.args[0], names, depth + 1, seen)
        return isinstance(func, ast.Attribute) and name in DEVICE_MOVES and _may_be_module(
            func.value, names, depth + 1, seen)
    if isinstance(expr, ast.Name):
        if expr.id == "self" or named_module(expr.id, names) or key_of(expr.id) in module_keys(names.text):
            return True
        if expr.id in seen:
            return False
        seen = seen | {expr.id}
        return any(
            (isinstance(value, (ast.Name, ast.Attribute)) and module_type(value, names))
            or _may_be_module(value, names, depth + 1, seen)
            for value in names.bindings.get(expr.id, ())
        )
    if isinstance(expr, ast.Attribute):
        return key_of(expr.attr) in module_keys(names.text) or (
            isinstance(expr.value, ast.Name) and expr.value.id == "self" and named_module(expr.attr, names))
    return False


def _from_models(func: ast.AST, names: Names) -> bool:
    """Whether a callee may resolve to one from a package of models (concepts.modules.models_path)."""
    return any(models_path(qualified) for qualified in qualified_names(func, names))


def _parameter(func: ast.AST, names: Names) -> bool:
    """Whether a callee may be torch's ``Parameter`` (under an alias too)."""
    if isinstance(func, ast.Attribute):
        return func.attr == "Parameter"
    return isinstance(func, ast.Name) and any(
        q.rsplit(".", 1)[-1] == "Parameter" for q in names.aliases.get(func.id, set()) | {func.id})


def _cast_receiver(call: ast.Call) -> ast.AST | None:
    """The receiver of what may be a cast (concepts.casts.cast_target, with its dtype test
    reduced to this: a ``.to`` whose arguments are all devices moves, it does not cast)."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in CAST_METHODS and not call.args and not call.keywords:
        return func.value
    if func.attr in TYPE_CAST_METHODS and (call.args or call.keywords):
        if func.attr == "to":
            # What cast_target reads as the dtype: `dtype=`, else the first positional
            # argument, else the second.
            candidates = [*(k.value for k in call.keywords if k.arg == "dtype"), *call.args[:2]]
            if all(device_like(arg) for arg in candidates):
                return None
        return func.value
    return None
