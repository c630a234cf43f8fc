"""Where values that cannot be pickled go, within one file (taint-style, for the pickling rules).

The pickling rules ask one question at each of their sinks (a process target or its
``args``, a pool's function, a ``DataLoader`` callable, an attribute stored on an object
that is pickled whole): *may this expression hold something pickle cannot store by
reference?* This module answers it, for the whole file at once, from one walk of the
tree made the first time a rule asks (:meth:`FileFlow.of`, cached on the FileContext).

**Sources** (values with no importable name):

* a ``lambda``; a generator expression;
* a function or class defined inside a function (a nested ``def``/``class``);
* a call of a generator function of the file (a generator object); an instance of a
  local class;
* a call of a function of the file, or of a method of the same class through ``self``,
  that returns one of these (a factory returning a local function);
* a ``functools.partial`` (or ``wraps(f)(g)``) holding any of these, and a transform
  container built from them (``transforms.Lambda(...)``, ``Compose([...])``);
* inside a decorator, the function it decorates when the wrapper is built with
  ``functools.wraps(func)``: the module attribute of that name now holds the wrapper,
  so pickle, which looks ``func`` up by its qualified name, finds another object;
* a parameter that holds a generator: named ``generator``/``gen``/``*_generator`` or
  annotated ``Generator``/``Iterator``, in a function that iterates it or yields.

**Propagators** (flow-insensitive, may-analysis within a function; names are looked
up through the enclosing function scopes like Python does, skipping class bodies):
assignments (every value a name is ever given in its scope: ``fn = fn or (lambda x:
x)`` keeps both), ``x or y``/``x and y``, conditional expressions, tuple/list/set/dict
displays (their elements), ``self.attr = value`` in any method of the same class (read
back as ``self.attr``), and for ``**d``: the entries of a dict display, ``dict(k=v)``,
``d["k"] = v`` and ``d.update(k=v)`` given to the name ``d`` in its scope.

**Sanitizers**: a parameter (its value comes from the caller: unknown, so clean), an
import, anything defined at module level, a method reached through ``self``; for
attribute stores, an attribute the file sets back in a ``finally`` block (a temporary
swap, see :attr:`FileFlow.restored`).

The sinks are the rules' own (see each pickling rule's docs); they ask :meth:`sources`
for an argument, and :meth:`keyword_sources` for what ``**d`` passes as one keyword.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Iterator

from dtype_lint.core.deferred import cst

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext

_PARTIALS = frozenset({"functools.partial", "partial"})
# Containers that keep the callables they are given (torchvision's `transforms.Lambda`
# and `transforms.Compose`, and look-alikes of the same names; `defaultdict`, which keeps
# its default factory): what they are built from flows into them.
HOLDERS = frozenset({"Lambda", "Compose", "defaultdict"})
_WRAPS = frozenset({"functools.wraps", "wraps"})
_GENERATOR_NAMES = ("generator", "gen")
_GENERATOR_TYPES = ("Generator", "Iterator", "AsyncGenerator", "AsyncIterator")
_MAX_DEPTH = 8


@dataclasses.dataclass(frozen=True)
class Source:
    """An unpicklable value reaching an expression: ``node`` is where it enters the
    queried expression (the expression itself, a branch or an element of it), ``kind``
    says what it is ("a lambda", "a local function 'f'", ...)."""

    node: cst.CSTNode
    kind: str


@dataclasses.dataclass(eq=False)
class FScope:
    """A module, function, lambda or class body, with what it binds."""

    node: cst.CSTNode
    parent: FScope | None  # the scope names are looked up in next (class bodies skipped)
    kind: str  # "module", "function", "lambda", "class"
    name: str = ""
    values: dict[str, list[cst.BaseExpression]] = dataclasses.field(default_factory=dict)
    bound: set[str] = dataclasses.field(default_factory=set)  # bound to something unknown
    params: dict[str, cst.Param] = dataclasses.field(default_factory=dict)
    defs: dict[str, FScope] = dataclasses.field(default_factory=dict)  # functions defined here
    classes: dict[str, cst.ClassDef] = dataclasses.field(default_factory=dict)
    # d -> [(key or None, value, the scope that stored it)] from d[k] = v, d.update(...)
    entries: dict[str, list[tuple[str | None, cst.BaseExpression, FScope]]] = dataclasses.field(
        default_factory=dict)
    returns: list[cst.BaseExpression] = dataclasses.field(default_factory=list)
    wrapped: set[str] = dataclasses.field(default_factory=set)  # params an inner wrapper wraps
    iterated: set[str] = dataclasses.field(default_factory=set)  # names a for loop iterates
    yields: bool = False
    owner: FScope | None = None  # for a method: its class's scope
    decorators: tuple[str, ...] = ()

    @property
    def nested(self) -> bool:
        """Inside a function (so what is defined here has no importable name)."""
        scope = self
        while scope is not None:
            if scope.kind in ("function", "lambda"):
                return True
            scope = scope.parent
        return False


class FileFlow:
    """The file's scopes and bindings, and the sources that reach an expression."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.root = FScope(ctx.module, None, "module", "<module>")
        self.by_node: dict[int, FScope] = {id(ctx.module): self.root}
        # class name -> attribute -> [(value, the method scope that stored it)]
        self.attrs: dict[str, dict[str, list[tuple[cst.BaseExpression, FScope]]]] = {}
        self._cache: dict[tuple[int, int], list[Source]] = {}
        # Attribute names set back in a `finally` block (`obj.forward = original`,
        # `setattr(obj, name, original)`): a store there is a temporary swap.
        self.restored: set[str] = set()
        from dtype_lint.core.traversal import walk

        collector = _Collector(self)
        for _ in walk(ctx.module.body, [collector]):
            pass

    @classmethod
    def of(cls, ctx: FileContext) -> FileFlow:
        """The file's flow, built on the first question and kept on the context."""
        flow = ctx.__dict__.get("_flow")
        if flow is None:
            flow = ctx.__dict__["_flow"] = cls(ctx)
        return flow

    # -- where the traversal is -------------------------------------------------------

    def here(self) -> FScope:
        """The scope the traversal is in now (the innermost function or lambda)."""
        for scope in reversed(self.ctx.scopes):
            found = self.by_node.get(id(scope.node))
            if found is not None:
                return found
        return self.root

    # -- queries ----------------------------------------------------------------------

    def sources(self, expr: cst.BaseExpression, scope: FScope | None = None, attributes: bool = True) -> list[Source]:
        """The unpicklable values ``expr`` may hold, each with where it enters ``expr``;
        ``attributes=False``: not what ``self.attr`` holds (a store of one attribute into
        another adds no new hazard)."""
        if not attributes and isinstance(expr, cst.Attribute):
            return []
        return self._sources(expr, scope or self.here(), 0, set())

    def keyword_sources(self, call: cst.Call, keyword: str, scope: FScope | None = None) -> list[Source]:
        """The sources that ``**d`` arguments of ``call`` may pass as ``keyword=`` (entries
        of ``d`` under that key, or under a key that is not a literal), each reported
        where the entry is stored."""
        scope = scope or self.here()
        out: list[Source] = []
        for arg in call.args:
            if arg.star == "**":
                for key, value, where in self._entries(arg.value, scope, 0, frozenset()):
                    if key in (None, keyword):
                        out += self._sources(value, where, 0, set())
        return out

    def constructed_class(self, expr: cst.BaseExpression, scope: FScope | None = None) -> str | None:
        """The name of the class whose instance ``expr`` holds, when a binding in the file
        says so: ``cls(...)`` in a classmethod, ``type(self)(...)``, or ``C(...)`` of a
        class named in CapWords."""
        scope = scope or self.here()
        for value in self._values(expr, scope, 0):
            if not isinstance(value, cst.Call):
                continue
            func = value.func
            method = _method_scope(scope)
            if isinstance(func, cst.Name) and func.value == "cls" and method is not None and method.owner:
                return method.owner.name
            if (isinstance(func, cst.Call) and isinstance(func.func, cst.Name) and func.func.value == "type"
                    and method is not None and method.owner) or (
                    isinstance(func, cst.Attribute) and func.attr.value == "__class__"
                    and method is not None and method.owner):
                return method.owner.name
            qualified = self.ctx.resolve(func)
            if qualified and qualified.rsplit(".", 1)[-1][:1].isupper():  # a class, by convention
                return qualified
        return None

    # -- the analysis -----------------------------------------------------------------

    def _values(self, expr: cst.BaseExpression, scope: FScope, depth: int,
                seen: frozenset = frozenset()) -> Iterator[cst.BaseExpression]:
        """``expr`` itself, or for a name every value it is given in its scope."""
        if isinstance(expr, cst.Name) and depth < _MAX_DEPTH:
            found = self._lookup(expr.value, scope)
            if found is not None and expr.value in found.values:
                if (id(found), expr.value) not in seen:
                    for value in found.values[expr.value]:
                        yield from self._values(value, found, depth + 1, seen | {(id(found), expr.value)})
                return
        yield expr

    def _lookup(self, name: str, scope: FScope) -> FScope | None:
        """The scope that binds ``name`` as seen from ``scope``."""
        current: FScope | None = scope
        while current is not None:
            if (name in current.values or name in current.bound or name in current.params
                    or name in current.defs or name in current.classes):
                return current
            current = current.parent
        return None

    def _sources(self, expr: cst.BaseExpression, scope: FScope, depth: int, seen: set[int]) -> list[Source]:
        if depth > _MAX_DEPTH or id(expr) in seen:
            return []
        key = (id(expr), id(scope))
        if key in self._cache:
            return self._cache[key]
        seen = seen | {id(expr)}
        out = self._sources_of(expr, scope, depth, seen)
        self._cache[key] = out
        return out

    def _sources_of(self, expr: cst.BaseExpression, scope: FScope, depth: int, seen: set[int]) -> list[Source]:
        if isinstance(expr, cst.Lambda):
            return [Source(expr, "a lambda")]
        if isinstance(expr, cst.GeneratorExp):
            return [Source(expr, "a generator")]
        if isinstance(expr, cst.Name):
            kind = self._name_kind(expr.value, scope, depth, seen)
            return [Source(expr, kind)] if kind else []
        if isinstance(expr, (cst.IfExp,)):
            return (self._sources(expr.body, scope, depth + 1, seen)
                    + self._sources(expr.orelse, scope, depth + 1, seen))
        if isinstance(expr, cst.BooleanOperation):
            return (self._sources(expr.left, scope, depth + 1, seen)
                    + self._sources(expr.right, scope, depth + 1, seen))
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            out: list[Source] = []
            for element in expr.elements:
                out += self._sources(element.value, scope, depth + 1, seen)
            return out
        if isinstance(expr, cst.Dict):
            out = []
            for element in expr.elements:
                out += self._sources(element.value, scope, depth + 1, seen)
            return out
        if isinstance(expr, cst.Attribute):
            kind = self._attribute_kind(expr, scope, depth, seen)
            return [Source(expr, kind)] if kind else []
        if isinstance(expr, cst.Call):
            kind = self._call_kind(expr, scope, depth, seen)
            return [Source(expr, kind)] if kind else []
        return []

    def _name_kind(self, name: str, scope: FScope, depth: int, seen: set[int]) -> str | None:
        found = self._lookup(name, scope)
        if found is None:
            return None
        if name in found.defs and found.nested:
            return f"a local function '{name}'"
        if name in found.classes and found.nested:
            return f"a local class '{name}'"
        if name in found.params:
            if name in found.wrapped:
                return (f"the function the decorator replaces ('{name}': functools.wraps gives the wrapper "
                        "its name, so pickle finds the wrapper, not it)")
            if _holds_generator(found, name):
                return f"a generator (parameter '{name}')"
        for value in found.values.get(name, ()):
            for source in self._sources(value, found, depth + 1, seen):
                return source.kind
        return None

    def _attribute_kind(self, expr: cst.Attribute, scope: FScope, depth: int, seen: set[int]) -> str | None:
        """``self.attr`` in a method: what any method of the class stores there."""
        if not isinstance(expr.value, cst.Name):
            return None
        method = _method_scope(scope)
        if method is None or method.owner is None or expr.value.value != _first_param(method):
            return None
        for value, where in self.attrs.get(method.owner.name, {}).get(expr.attr.value, ()):
            for source in self._sources(value, where, depth + 1, seen):
                return source.kind
        return None

    def _call_kind(self, call: cst.Call, scope: FScope, depth: int, seen: set[int]) -> str | None:
        qualified = self.ctx.resolve(call.func)
        if qualified in _PARTIALS:
            for arg in call.args:
                for source in self._sources(arg.value, scope, depth + 1, seen):
                    return f"a functools.partial of {source.kind}"
            return None
        if qualified and qualified.rsplit(".", 1)[-1] in HOLDERS:
            for arg in call.args:
                for source in self._sources(arg.value, scope, depth + 1, seen):
                    return f"{source.kind} held by {qualified.rsplit('.', 1)[-1]}(...)"
            return None
        # functools.wraps(f)(g) is g.
        if isinstance(call.func, cst.Call) and self.ctx.resolve(call.func.func) in _WRAPS and call.args:
            for source in self._sources(call.args[0].value, scope, depth + 1, seen):
                return source.kind
            return None
        method = _method_scope(scope)
        if (isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and method is not None
                and method.owner is not None and call.func.value.value == _first_param(method)):
            # self.make_fn(): a method of the same class used as a factory.
            function = method.owner.defs.get(call.func.attr.value)
            for value in function.returns if function is not None else ():
                for source in self._sources(value, function, depth + 1, seen):
                    return f"{source.kind} returned by self.{call.func.attr.value}()"
            return None
        if isinstance(call.func, cst.Name):
            name = call.func.value
            found = self._lookup(name, scope)
            if found is not None and name in found.classes and found.nested:
                return f"an instance of the local class '{name}'"
            function = found.defs.get(name) if found is not None else None
            if function is None:
                return None
            if function.yields:
                return f"a generator (from {name}())"
            for value in function.returns:
                for source in self._sources(value, function, depth + 1, seen):
                    return f"{source.kind} returned by {name}()"
        return None

    def _entries(self, expr: cst.BaseExpression, scope: FScope, depth: int,
                 seen: frozenset) -> Iterator[tuple[str | None, cst.BaseExpression, FScope]]:
        """(key, value, scope) for what a dict expression may hold; key None when it is
        not a literal."""
        if depth > _MAX_DEPTH:
            return
        if isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    yield _literal(element.key), element.value, scope
                else:  # **other
                    yield from self._entries(element.value, scope, depth + 1, seen)
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict":
            for arg in expr.args:
                if arg.keyword is not None:
                    yield arg.keyword.value, arg.value, scope
                else:
                    yield from self._entries(arg.value, scope, depth + 1, seen)
        elif isinstance(expr, cst.Name):
            found = self._lookup(expr.value, scope)
            if found is None or (id(found), expr.value) in seen:
                return
            seen = seen | {(id(found), expr.value)}
            for key, value, where in found.entries.get(expr.value, ()):
                yield key, value, where
            for value in found.values.get(expr.value, ()):
                yield from self._entries(value, found, depth + 1, seen)


def attribute_key(name: cst.BaseExpression, ctx: FileContext) -> str:
    """The attribute a ``setattr`` names: the literal, else the expression's text."""
    literal = _literal(name)
    return literal if literal is not None else ctx.module.code_for_node(name)


def _literal(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _method_scope(scope: FScope) -> FScope | None:
    """The method ``scope`` is in (itself, or the method enclosing a nested lambda)."""
    current: FScope | None = scope
    while current is not None:
        if current.owner is not None:
            return current
        if current.kind != "lambda":
            return None
        current = current.parent
    return None


def _first_param(scope: FScope) -> str | None:
    return next(iter(scope.params), None)


def _holds_generator(scope: FScope, name: str) -> bool:
    """A parameter that holds a generator: so named or annotated, in a function that
    iterates it or is a generator itself (a pipeline stage)."""
    if not (name in scope.iterated or scope.yields):
        return False
    param = scope.params[name]
    annotation = param.annotation.annotation if param.annotation is not None else None
    if annotation is not None:
        text = _dotted(annotation)
        return text.rsplit(".", 1)[-1] in _GENERATOR_TYPES
    return name in _GENERATOR_NAMES or name.endswith(tuple(f"_{n}" for n in _GENERATOR_NAMES))


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


class _Collector:
    """One walk of the module: scopes, bindings, returns, stores."""

    def __init__(self, flow: FileFlow) -> None:
        self.flow = flow
        self.stack: list[FScope] = [flow.root]
        self.in_finally = 0

    @property
    def scope(self) -> FScope:
        return self.stack[-1]

    def _lookup_parent(self) -> FScope:
        """Where a new function's names are looked up next: class bodies are skipped."""
        scope = self.scope
        while scope.kind == "class" and scope.parent is not None:
            scope = scope.parent
        return scope

    def _push(self, scope: FScope) -> None:
        self.flow.by_node[id(scope.node)] = scope
        self.stack.append(scope)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        outer = self.scope
        decorators = tuple(self.flow.ctx.resolve(d.decorator) or "" if not isinstance(d.decorator, cst.Call)
                           else self.flow.ctx.resolve(d.decorator.func) or "" for d in node.decorators)
        scope = FScope(node, self._lookup_parent(), "function", node.name.value, decorators=decorators)
        if outer.kind == "class":
            scope.owner = outer
        outer.defs[node.name.value] = scope
        # A wrapper built with functools.wraps(p) around a parameter p of this function.
        for decorator in node.decorators:
            d = decorator.decorator
            if (isinstance(d, cst.Call) and self.flow.ctx.resolve(d.func) in _WRAPS and d.args
                    and isinstance(d.args[0].value, cst.Name) and outer.kind == "function"):
                outer.wrapped.add(d.args[0].value.value)
        self._push(scope)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._push(FScope(node, self._lookup_parent(), "lambda", "<lambda>"))

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self.stack.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.classes[node.name.value] = node
        self._push(FScope(node, self.scope, "class", node.name.value))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.pop()

    def visit_Param(self, node: cst.Param) -> None:
        self.scope.params[node.name.value] = node

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        scope = self.scope
        if isinstance(target, cst.Name):
            if value is None:
                scope.bound.add(target.value)
            else:
                scope.values.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, None)
        elif isinstance(target, cst.Subscript) and value is not None and isinstance(target.value, cst.Name):
            index = target.slice[0].slice if len(target.slice) == 1 else None
            key = _literal(index.value) if isinstance(index, cst.Index) else None
            holder = self.flow._lookup(target.value.value, scope) or scope
            holder.entries.setdefault(target.value.value, []).append((key, value, scope))
        elif isinstance(target, cst.Attribute) and value is not None:
            self._store(target.value, target.attr.value, value)

    def visit_Finally(self, node: cst.Finally) -> None:
        self.in_finally += 1

    def leave_Finally(self, node: cst.Finally) -> None:
        self.in_finally -= 1

    def _store(self, receiver: cst.BaseExpression, attr: str, value: cst.BaseExpression) -> None:
        if self.in_finally:
            self.flow.restored.add(attr)
        method = _method_scope(self.scope)
        if method is not None and method.owner is not None and isinstance(receiver, cst.Name) \
                and receiver.value == _first_param(method):
            self.flow.attrs.setdefault(method.owner.name, {}).setdefault(attr, []).append((value, self.scope))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)
        if node.value is None and isinstance(node.target, cst.Name):
            self.scope.bound.add(node.target.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self.scope.bound.add(node.target.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None)
        if isinstance(node.iter, cst.Name):
            self.scope.iterated.add(node.iter.value)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, node.item if isinstance(node.asname.name, cst.Name) else None)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.scope.bound.add(alias.asname.name.value)
            else:
                self.scope.bound.add(_dotted(alias.name).split(".")[0])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.scope.bound.add(alias.asname.name.value)
            else:
                self.scope.bound.add(_dotted(alias.name))

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and self.scope.kind == "function":
            self.scope.returns.append(node.value)

    def visit_Yield(self, node: cst.Yield) -> None:
        if self.scope.kind == "function":
            self.scope.yields = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "setattr" and len(node.args) == 3:
            self._store(node.args[0].value, attribute_key(node.args[1].value, self.flow.ctx), node.args[2].value)
        elif (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
              and func.attr.value in ("update", "setdefault")):
            holder = self.flow._lookup(func.value.value, self.scope)
            if holder is None:
                return
            entries = holder.entries.setdefault(func.value.value, [])
            if func.attr.value == "setdefault" and len(node.args) == 2:
                entries.append((_literal(node.args[0].value), node.args[1].value, self.scope))
            elif func.attr.value == "update":
                for arg in node.args:
                    if arg.keyword is not None:
                        entries.append((arg.keyword.value, arg.value, self.scope))
