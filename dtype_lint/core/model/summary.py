"""One file's summary, read from its ``ast``: what other files need to know about it.

A summary holds names, not trees, so it is small, JSON-able and cached by content:

* ``imports``: module-level import aliases, relative imports resolved (``from .heads
  import Scorer`` in ``nets/__init__.py`` binds ``Scorer`` to ``nets.heads.Scorer``),
  and ``stars``, the modules of ``from m import *``;
* ``aliases``: module-level ``Name = other.name`` re-bindings;
* ``classes``: each top-level class's bases (dotted as the file imports them), its
  constructor's parameters, their defaults that are names, and which of them
  ``__init__`` keeps on ``self`` (directly, through ``x or default``, a conditional, or
  a container display);
* ``functions``: each top-level function's parameters, and, read on first use
  (:func:`detail`), which of them it casts to a low precision (the whole object, or
  every parameter of it), which it hands on to another function (so casts are
  followed through helpers), and whether it returns a callable of its own (a lambda,
  a local function or class: a factory whose product pickle cannot import).

Positions are 1-based lines and 1-based columns, as findings are.
"""

from __future__ import annotations

import ast
import dataclasses
import re

from dtype_lint.core.guards import parse_quietly
from dtype_lint.core.shapes import dotted
from dtype_lint.frameworks.casts import TYPE_CAST_METHODS

# Casts to these lower a model's precision; `.float()`/`.double()` restore or widen it.
_LOW = frozenset({"float16", "bfloat16", "half", "fp16", "bf16"})
_LOW_METHODS = frozenset({"half", "bfloat16"})
_TREE_MAPS = frozenset({"tree_map", "map"})
_EACH = frozenset({"parameters", "named_parameters", "values", "items", "buffers"})


@dataclasses.dataclass
class ClassSummary:
    line: int
    column: int
    bases: list[str]
    init_params: list[str]
    stores: dict[str, list[int]]  # constructor parameter -> [line, column] of the store on self
    init_defaults: dict[str, str]  # constructor parameter -> its default, where a dotted name
    # Constructor parameters that ``__init__`` only calls (or leaves unused): it keeps
    # nothing of them, on ``self`` or anywhere else. (No default: a summary cached
    # without it is read again.)
    only_called: list[str]


@dataclasses.dataclass
class FunctionSummary:
    line: int
    column: int
    params: list[str]
    # What the body does with the parameters, read on first use (:func:`detail`): most
    # functions of most files are never asked about.
    # parameter -> [line, column, how, the parameter naming the dtype or ""]
    casts: dict[str, list] | None = None
    # parameter -> [[callee as the file names it, argument position, line, column], ...]
    passes: dict[str, list[list]] | None = None
    # [line, column, what] of a callable of its own it returns (a lambda, a local
    # function or class: a factory whose product pickle cannot import); [] if none.
    returns: list | None = None


@dataclasses.dataclass
class ModuleSummary:
    name: str
    imports: dict[str, str]
    stars: list[str]
    aliases: dict[str, str]
    classes: dict[str, ClassSummary]
    functions: dict[str, FunctionSummary]

    def as_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "ModuleSummary":
        """A stored summary; TypeError (or KeyError) for one of another layout, or not of
        this program's making (a cache folder comes with the repository linted)."""
        summary = cls(data["name"], data["imports"], data["stars"], data["aliases"],
                      {k: ClassSummary(**v) for k, v in data["classes"].items()},
                      {k: FunctionSummary(**v) for k, v in data["functions"].items()})
        if not _well_formed(summary):
            raise TypeError("not a summary")
        return summary


def _well_formed(summary: ModuleSummary) -> bool:
    """Whether every field holds what :func:`summarize` and :func:`detail` put there."""
    return (isinstance(summary.name, str) and _table(summary.imports, _is_str) and _names(summary.stars)
            and _table(summary.aliases, _is_str) and all(map(_class_well_formed, summary.classes.values()))
            and all(map(_function_well_formed, summary.functions.values())))


def _class_well_formed(c: ClassSummary) -> bool:
    return (_place([c.line, c.column]) and _names(c.bases) and _names(c.init_params) and _table(c.stores, _place)
            and _table(c.init_defaults, _is_str) and _names(c.only_called))


def _function_well_formed(f: FunctionSummary) -> bool:
    def cast(v) -> bool:  # [line, column, how, the parameter naming the dtype]
        return isinstance(v, list) and len(v) == 4 and _place(v[:2]) and _names(v[2:])

    def handed(v) -> bool:  # [callee, argument position or keyword, line, column]
        return (isinstance(v, list) and len(v) == 4 and isinstance(v[0], str) and isinstance(v[1], (int, str))
                and _place(v[2:]))

    def returned(v) -> bool:  # [] or [line, column, what]
        return v == [] or (isinstance(v, list) and len(v) == 3 and _place(v[:2]) and isinstance(v[2], str))

    return (_place([f.line, f.column]) and _names(f.params) and (f.casts is None or _table(f.casts, cast))
            and (f.passes is None or _table(f.passes, lambda v: isinstance(v, list) and all(map(handed, v))))
            and (f.returns is None or returned(f.returns)))


def _is_str(value) -> bool:
    return isinstance(value, str)


def _names(value) -> bool:
    return isinstance(value, list) and all(map(_is_str, value))


def _table(value, kind) -> bool:
    return isinstance(value, dict) and all(_is_str(k) and kind(v) for k, v in value.items())


def _place(value) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)


def summarize(text: str, name: str, is_package: bool, tree: ast.Module | None = None) -> ModuleSummary:
    """The summary of module ``name``'s source (``tree``: its ast, where the caller has
    it); an empty one if it does not parse."""
    summary = ModuleSummary(name, {}, [], {}, {}, {})
    tree = tree or parse_quietly(text)
    if tree is None:
        return summary
    package = name if is_package else name.rpartition(".")[0]
    for stmt in module_statements(tree.body):
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _imports(stmt, package, summary)
        elif (bound := rebinding(stmt)) is not None:
            summary.aliases[bound[0]] = bound[1]
        elif isinstance(stmt, ast.ClassDef):
            summary.classes[stmt.name] = _class(stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            summary.functions[stmt.name] = FunctionSummary(stmt.lineno, stmt.col_offset + 1, _params(stmt))
    return summary


def rebinding(stmt: ast.stmt) -> tuple[str, str] | None:
    """``(name, dotted)`` for ``name = a.b.c``: a name bound to another (an alias)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        target = dotted(stmt.value)
        if target:
            return stmt.targets[0].id, target
    return None


_STAR_IMPORT = re.compile(r"import\s*\*")


def has_star_import(text: str) -> bool:
    """Whether the text may hold ``from m import *`` (a literal-led search, cheap)."""
    return _STAR_IMPORT.search(text) is not None


def module_statements(body: list[ast.stmt]):
    """Top-level statements, and those in module-level ``if``/``try`` blocks (guarded
    imports, version switches)."""
    for stmt in body:
        if isinstance(stmt, (ast.If, ast.Try)) or type(stmt).__name__ == "TryStar":
            for block in ("body", "orelse", "finalbody"):
                yield from module_statements(getattr(stmt, block, []))
            for handler in getattr(stmt, "handlers", []):
                yield from module_statements(handler.body)
        else:
            yield stmt


def _imports(stmt: ast.Import | ast.ImportFrom, package: str, summary: ModuleSummary) -> None:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                summary.imports[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                summary.imports[head] = head
        return
    base = absolute_module(stmt.module, stmt.level, package)
    if base is None:
        return
    for alias in stmt.names:
        if alias.name == "*":
            summary.stars.append(base)
        else:
            summary.imports[alias.asname or alias.name] = f"{base}.{alias.name}"


def absolute_module(module: str | None, level: int, package: str) -> str | None:
    """The dotted module a (maybe relative) ``from`` import names, seen from ``package``;
    None where it climbs above the package's root."""
    if not level:
        return module
    parts = package.split(".") if package else []
    if level - 1 >= len(parts):  # above the top-level package
        return None
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else [])) or None


def _stores_locals(call: ast.Call) -> bool:
    """A call that hands ``locals()`` to be set on ``self``: with ``self`` among its
    arguments, or as ``self.__dict__.update(...)``."""
    if not any(isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id == "locals" and not a.args
               for a in call.args):
        return False
    func = call.func
    on_dict = (isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Attribute)
               and func.value.attr == "__dict__" and _on_self(func.value))
    return on_dict or any(isinstance(a, ast.Name) and a.id == "self" for a in call.args)


def _class(node: ast.ClassDef) -> ClassSummary:
    bases = [b for b in (dotted(base) for base in node.bases) if b]
    init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    params: list[str] = []
    stores: dict[str, list[int]] = {}
    defaults: dict[str, str] = {}
    escaping: set[str] = set()  # names __init__ uses other than as a call's function
    if init is not None:
        params = _params(init)[1:]
        positional = [*init.args.posonlyargs, *init.args.args]
        pairs = list(zip(positional[len(positional) - len(init.args.defaults):], init.args.defaults))
        pairs += [(a, d) for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults) if d is not None]
        defaults = {a.arg: name for a, d in pairs if (name := dotted(d))}
        # One walk, breadth first (a call comes before its function): the first store of
        # each parameter on self, and the names used other than as a call's function.
        called: set[int] = set()
        for sub in ast.walk(init):
            if isinstance(sub, ast.Call):
                called.add(id(sub.func))
                if _stores_locals(sub):
                    # `set_attributes(self, locals())`, `self.__dict__.update(locals())`:
                    # every parameter becomes an attribute.
                    escaping.update(params)
                    for name in params:
                        stores.setdefault(name, [sub.lineno, sub.col_offset + 1])
            elif isinstance(sub, ast.Name) and id(sub) not in called:
                escaping.add(sub.id)
            elif isinstance(sub, (ast.Assign, ast.AnnAssign)) and sub.value is not None:
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                if any(_on_self(t) for t in targets):
                    for name in _kept_names(sub.value):
                        if name in params:
                            stores.setdefault(name, [sub.lineno, sub.col_offset + 1])
    # what __init__ only calls (`label_fn(path)`) or leaves unused: nothing of it outlives it
    only_called = [p for p in params if p not in escaping]
    return ClassSummary(node.lineno, node.col_offset + 1, bases, params, stores, defaults, only_called)


def _on_self(target: ast.expr) -> bool:
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"


def _kept_names(value: ast.expr) -> list[str]:
    """The names a stored value keeps as they are: ``x``, ``x or default``, ``a if c else
    b``, and the elements of a list, tuple or dict display."""
    if isinstance(value, ast.Name):
        return [value.id]
    if isinstance(value, ast.BoolOp):
        return [n for v in value.values for n in _kept_names(v)]
    if isinstance(value, ast.IfExp):
        return _kept_names(value.body) + _kept_names(value.orelse)
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return [n for v in value.elts for n in _kept_names(v)]
    if isinstance(value, ast.Dict):
        return [n for v in value.values for n in _kept_names(v)]
    return []


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[str]:
    a = node.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def detail(summary: FunctionSummary, tree: ast.Module, name: str) -> None:
    """Fill in what the top-level function ``name`` of ``tree`` (the file the summary
    was read from) does with its parameters: which it casts, which it hands on."""
    node = next((s for s in module_statements(tree.body)
                 if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name), None)
    casts: dict[str, list] = {}
    passes: dict[str, list[list]] = {}
    if node is not None:
        params = _params(node)
        each: dict[str, str] = {}  # loop variable -> the parameter whose members it runs over
        for sub in ast.walk(node):
            if isinstance(sub, ast.For) and isinstance(sub.target, (ast.Name, ast.Tuple)):
                owner = _members_of(sub.iter, params)
                if owner:
                    for target in ast.walk(sub.target):
                        if isinstance(target, ast.Name):
                            each[target.id] = owner
            elif isinstance(sub, ast.Call):
                _call(sub, params, each, casts, passes)
    summary.casts, summary.passes = casts, passes
    summary.returns = _returned_local(node) if node is not None else []


def _returned_local(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list:
    """[line, column, what] of the first lambda, or function or class defined in
    ``function``'s own body, that one of its own ``return`` statements hands back."""
    local: dict[str, str] = {}
    returns: list[ast.Return] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            local[node.name] = f"a local {kind} '{node.name}'"
            continue  # what a nested function returns is its own
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            returns.append(node)
        stack.extend(ast.iter_child_nodes(node))
    for ret in returns:
        value = ret.value
        if isinstance(value, ast.Lambda):
            return [value.lineno, value.col_offset + 1, "a lambda"]
        if isinstance(value, ast.Name) and value.id in local:
            return [ret.lineno, ret.col_offset + 1, local[value.id]]
    return []


def _members_of(iterable: ast.expr, params: list[str]) -> str | None:
    """The parameter ``p`` when a loop runs over ``p.parameters()``, ``p.values()``..."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and iterable.func.attr in _EACH:
        root = _root_name(iterable.func.value)
        return root if root in params else None
    return None


def _call(call: ast.Call, params: list[str], each: dict[str, str], casts: dict[str, list],
          passes: dict[str, list[list]]) -> None:
    func = call.func
    where = [call.lineno, call.col_offset + 1]
    if isinstance(func, ast.Attribute):
        root = _root_name(func.value)
        how = _low_cast(call, params)
        if how is not None and root is not None:
            if root in params and _is_whole(func.value):
                casts.setdefault(root, where + [f".{func.attr}()", how])
            elif root in each:
                casts.setdefault(each[root], where + ["each parameter", how])
            return
        if func.attr == "apply" and root in params and call.args and _casts_each(call.args[0], params):
            casts.setdefault(root, where + [".apply() of a cast", ""])
            return
    name = dotted(func)
    if name and name.rsplit(".", 1)[-1] in _TREE_MAPS and len(call.args) >= 2:
        tree = _root_name(call.args[1])
        if tree in params and _casts_each(call.args[0], params):
            casts.setdefault(tree, where + ["tree map of a cast", ""])
            return
    if name:
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Name) and arg.id in params:
                passes.setdefault(arg.id, []).append([name, position] + where)
        for keyword in call.keywords:
            if keyword.arg and isinstance(keyword.value, ast.Name) and keyword.value.id in params:
                passes.setdefault(keyword.value.id, []).append([name, keyword.arg] + where)


def _is_whole(receiver: ast.expr) -> bool:
    """``model`` or ``model.module``, not ``model.weight.data`` (one tensor) ... a cast of
    an attribute of a parameter is still the parameter's, except of ``.data``/``.grad``."""
    return not (isinstance(receiver, ast.Attribute) and receiver.attr in ("data", "grad", "weight", "bias"))


def _low_cast(call: ast.Call, params: list[str]) -> str | None:
    """``""`` for a cast to a low-precision dtype spelled in the call, the name of the
    parameter that gives the dtype for ``.to(dtype)``, None for anything else."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in _LOW_METHODS and not call.args:
        return ""
    if func.attr not in TYPE_CAST_METHODS:
        return None
    values = list(call.args) + [k.value for k in call.keywords if k.arg == "dtype"]
    for value in values:
        if _names_low(value):
            return ""
        if isinstance(value, ast.Name) and value.id in params and "dtype" in value.id:
            return value.id
    return None


def _names_low(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in _LOW
    name = dotted(node)
    return bool(name) and "." in name and name.rsplit(".", 1)[-1] in _LOW


def _casts_each(fn: ast.expr, params: list[str]) -> bool:
    """A lambda whose body casts its argument to a low precision."""
    if not isinstance(fn, ast.Lambda):
        return False
    return any(isinstance(s, ast.Call) and _low_cast(s, params) is not None for s in ast.walk(fn.body))


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None
