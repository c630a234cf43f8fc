"""The file's classes and functions as the layer facts read them, from CPython's ``ast``
of the *whole* source text (never the prefilter's reduction of it, so the findings do not
depend on what the prefilter keeps): who defines what, who calls whom (by name and through
``self``), what each method stores on ``self``, and each class's in-file family. The
concepts of :mod:`dtype_lint.concepts.layer_facts` are built on it."""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
from typing import Iterable, Iterator

from dtype_lint.core.shapes import device_like, dotted, last_name, walk

Key = tuple  # (innermost enclosing class name or None, (function names, outermost first))
# Calls that create parameters or state: a dtype passed to them is a storage dtype.
_PARAM_CALLS = frozenset({"param", "variable", "get_parameter", "get_state", "add_weight", "add_variable",
                          "create_parameter", "Parameter", "register_parameter", "register_buffer"})
_INIT_METHODS = frozenset({"__init__", "setup", "build", "init_weights", "init_weights_and_state", "reset_parameters",
                           "_init_weights", "__post_init__"})
_DEVICE_MOVES = frozenset({"to", "cuda", "cpu"})


@dataclasses.dataclass
class _Function:
    key: Key
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: str | None  # the class it is a method of (directly), if any
    params: list[str]


@dataclasses.dataclass
class _Class:
    name: str
    node: ast.ClassDef
    bases: list[str]  # qualified, as far as imports tell
    methods: dict[str, _Function]


class Definitions:
    """The file's classes and functions, and the questions every layer concept asks of
    them; the concepts' answers are memoised here, once per file."""

    def __init__(self, tree: ast.Module | None, compute_names: frozenset[str], excluded: tuple[str, ...]) -> None:
        self.compute_names = compute_names
        self.excluded = excluded  # class-name globs whose forwards are not a layer's (losses, entry points)
        self.aliases: dict[str, str] = {}
        self.classes: dict[str, _Class] = {}
        self.functions: dict[Key, _Function] = {}
        self.top_functions: dict[str, _Function] = {}
        self.layers: set[str] = set()
        self.forward_path: set[Key] = set()
        self.helper_names: frozenset[str] = frozenset()
        self._tree = tree
        self._parent_map: dict[int, ast.AST] | None = None
        self._benign_params: dict[tuple[Key, str], bool] = {}
        self._benign_fields: dict[tuple[str, str], bool] = {}
        self._quantised: dict[Key, bool] = {}
        self._casts_back: dict[tuple[str | None, str], bool] = {}  # callee -> it casts back
        self._self_stores: dict[Key, list[tuple[str, ast.AST]]] = {}
        self._casts: dict[Key, set[str]] = {}
        self._kept: frozenset[str] | None = None  # see kept_float32
        self._returns_cast_back: dict[Key, bool] = {}
        self._returns: dict[Key, set[str]] = {}  # see _returned
        self._edges: dict[Key, list] = {}  # see islands._flow_edges
        self._own_calls: dict[Key, list[ast.Call]] = {}  # see _calls_in
        self._walked: dict[Key, list[ast.AST]] = {}  # see _nodes
        self._following: set[Key] = set()  # functions whose calls are being followed
        if tree is not None:
            self._collect(tree)

    @property
    def _parents(self) -> dict[int, ast.AST]:
        """Each node's parent by id, for the whole file, found on first use: the forward
        path finds the parents it needs in its own walks."""
        if self._parent_map is None:
            self._parent_map = {}
            if self._tree is not None:
                walk(self._tree, self._parent_map)
        return self._parent_map

    def _collect(self, tree: ast.Module) -> None:
        # Imports are statements: a walk of the statements alone finds them all. The first
        # import of a name in the file wins (within one statement, the last).
        for node in _statements(tree.body):
            found: dict[str, str] = {}
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            for local, qualified in found.items():
                self.aliases.setdefault(local, qualified)

        def visit(body: Iterable[ast.AST], cls: _Class | None, functions: tuple[str, ...]) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef):
                    info = _Class(node.name, node, [q for q in (self.resolve(b) for b in node.bases) if q], {})
                    self.classes.setdefault(node.name, info)
                    visit(node.body, info, functions)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = (cls.name if cls else None, functions + (node.name,))
                    args = node.args
                    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                    function = _Function(key, node, cls.name if cls and not functions else None, params)
                    self.functions.setdefault(key, function)
                    if cls is None and not functions:
                        self.top_functions.setdefault(node.name, function)
                    if cls is not None and not functions:
                        cls.methods.setdefault(node.name, function)
                    visit(node.body, cls, functions + (node.name,))
                else:
                    for field in ("body", "orelse", "finalbody", "handlers"):
                        inner = getattr(node, field, None)
                        if isinstance(inner, list):
                            visit(inner, cls, functions)
                    for case in getattr(node, "cases", ()):
                        visit(case.body, cls, functions)

        visit(tree.body, None, ())

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted name with its head import written out."""
        name = dotted(node)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        return self.aliases.get(head, head) + dot + rest

    def _nodes(self, function: _Function) -> list[ast.AST]:
        """Every node of the function (shapes.walk), found once: most facts read them."""
        found = self._walked.get(function.key)
        if found is None:
            found = self._walked[function.key] = walk(function.node)
        return found

    def _stores(self, function: _Function) -> list[tuple[str, ast.AST]]:
        """The function's ``self.<attribute> = value`` stores, found once."""
        found = self._self_stores.get(function.key)
        if found is None:
            found = self._self_stores[function.key] = list(_self_stores(function.node))
        return found

    def _class_of(self, function: _Function) -> _Class | None:
        name = function.key[0]
        return self.classes.get(name) if name else None

    def _method(self, cls: _Class, name: str, depth: int = 0) -> _Function | None:
        if name in cls.methods:
            return cls.methods[name]
        if depth > 8:
            return None
        for base in cls.bases:
            parent = self.classes.get(base.rsplit(".", 1)[-1])
            if parent is not None and parent is not cls:
                found = self._method(parent, name, depth + 1)
                if found is not None:
                    return found
        return None

    def _calls_of(self, function: _Function) -> Iterator[tuple[_Function, ast.Call]]:
        """Each call of a module-level function (by its name) or of a method (through
        ``self``, in its class's in-file family), with the function it is written in."""
        if len(function.key[1]) != 1:
            return  # a nested function is called through its own scope only
        name = function.key[1][0]
        family = self._family(function.cls) if function.cls is not None else set()
        for caller in self.functions.values():
            if function.cls is not None and (caller.key[0] not in family or not self._resolves_to(
                    caller.key[0], name, function)):
                continue
            for node in self._calls_in(caller):
                if ((function.cls is not None and isinstance(node.func, ast.Attribute)
                     and node.func.attr == name and _is_self(node.func.value))
                        or (function.cls is None and isinstance(node.func, ast.Name) and node.func.id == name)):
                    yield caller, node

    def _calls_in(self, function: _Function) -> list[ast.Call]:
        """The calls of the function's own body (not of functions defined in it), found once."""
        found = self._own_calls.get(function.key)
        if found is None:
            found = self._own_calls[function.key] = [n for n in _own_nodes(function.node) if isinstance(n, ast.Call)]
        return found

    def _resolves_to(self, cls: str | None, name: str, function: _Function) -> bool:
        """Whether ``self.<name>`` in a method of ``cls`` may be ``function``: a sibling
        class that defines its own ``name`` calls that one."""
        info = self.classes.get(cls) if cls else None
        found = self._method(info, name) if info is not None else None
        return found is None or found is function

    def _family(self, cls_name: str) -> set[str]:
        family = {cls_name}
        changed = True
        while changed:
            changed = False
            for cls in self.classes.values():
                if cls.name in family:
                    for base in cls.bases:
                        last = base.rsplit(".", 1)[-1]
                        if last in self.classes and last not in family:
                            family.add(last)
                            changed = True
                elif any(b.rsplit(".", 1)[-1] in family for b in cls.bases):
                    family.add(cls.name)
                    changed = True
        return family


def _statements(nodes: Iterable[ast.AST]) -> Iterator[ast.stmt]:
    """Every statement among ``nodes`` and inside them (bodies, branches, handlers, match
    cases), in the file's order."""
    for node in nodes:
        if isinstance(node, ast.stmt):
            yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list and value and isinstance(value[0], (ast.stmt, ast.excepthandler, ast.match_case)):
                yield from _statements(value)


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _self_stores(function: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(attribute, value) of each ``self.<attribute> = value`` in the function."""
    for node in walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and _is_self(target.value):
                    yield target.attr, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            if isinstance(node.target, ast.Attribute) and _is_self(node.target.value):
                yield node.target.attr, node.value


def _stored_values(function: ast.AST, stores: list[tuple[str, ast.AST]]) -> Iterator[ast.AST]:
    """What the function stores on ``self``: assigned attributes (its ``stores``) and
    registered buffers or parameters."""
    yield from (value for _, value in stores)
    for node in walk(function):
        if isinstance(node, ast.Call) and last_name(node.func) in ("register_buffer", "register_parameter"):
            yield from node.args[1:]


def _reads_name(value: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in walk(value))


def _own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of a function's own body: not those of the functions, lambdas and
    classes defined inside it (their calls are theirs)."""
    out: list[ast.AST] = []
    stack = [*ast.iter_child_nodes(function)]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def passes_argument(call: ast.Call, name: str, position: int) -> bool:
    """Whether the call passes the parameter ``name``, by keyword or at ``position``
    (-1: keyword only), with no star argument before it to shift the positions."""
    return any(k.arg == name for k in call.keywords) or (
        0 <= position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args))


def _positional_param(target: _Function, call: ast.Call, use: ast.AST) -> str | None:
    params = [p for p in target.params if p != "self"] if target.cls else target.params
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if arg is use:
            return params[index] if index < len(params) else None
    return None


def _param_names(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    a = function.args
    return {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None}


def _body_of(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.AST]:
    """What runs when the function is called (not its defaults and decorators)."""
    return [function.body] if isinstance(function, ast.Lambda) else list(function.body)


def _at_init(name: str) -> bool:
    """A method that runs at init time: a known one, or one named for (re)initialising
    (``_init_buffers``, ``reset_cache``)."""
    lower = name.lower()
    return name in _INIT_METHODS or lower.lstrip("_").startswith(("init", "reset"))


def _device_only(call: ast.Call) -> bool:
    """A ``.to()``/``.cuda()``/``.cpu()`` whose arguments all name a device."""
    return all(device_like(a) for a in (*call.args, *(k.value for k in call.keywords if k.arg != "non_blocking")))


def _unmoved(node: ast.AST) -> ast.AST:
    """The value a chain of device moves (``v.to(x.device)``, ``v.cuda()``) starts from."""
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DEVICE_MOVES
           and _device_only(node)):
        node = node.func.value
    return node
