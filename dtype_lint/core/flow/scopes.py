"""The flow engine's picture of one file: its scopes (module, functions, lambdas, class
bodies), what each binds (values, parameters, nested definitions, dict entries, returns),
and what methods store on ``self``, from one walk of the module (:class:`Collector`)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from dtype_lint.core.deferred import cst

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.flow.engine import FileFlow

WRAPS = frozenset({"functools.wraps", "wraps"})


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

    @property
    def nested(self) -> bool:
        """Inside a function (so what is defined here has no importable name)."""
        scope = self
        while scope is not None:
            if scope.kind in ("function", "lambda"):
                return True
            scope = scope.parent
        return False


def attribute_key(name: cst.BaseExpression, ctx: FileContext) -> str:
    """The attribute a ``setattr`` names: the literal, else the expression's text."""
    text = literal(name)
    return text if text is not None else ctx.module.code_for_node(name)


def literal(node: cst.BaseExpression) -> str | None:
    """The value of a string literal, else None."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def method_scope(scope: FScope) -> FScope | None:
    """The method ``scope`` is in (itself, or the method enclosing a nested lambda)."""
    current: FScope | None = scope
    while current is not None:
        if current.owner is not None:
            return current
        if current.kind != "lambda":
            return None
        current = current.parent
    return None


def first_param(scope: FScope) -> str | None:
    return next(iter(scope.params), None)


def dotted(node: cst.BaseExpression) -> str:
    """``a.b.c`` of a name, an attribute chain or a subscript of one; else ``""``."""
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


class Collector:
    """One walk of the module: scopes, bindings, returns, stores."""

    def __init__(self, flow: FileFlow) -> None:
        self.flow = flow
        self.stack: list[FScope] = [flow._root]  # type: ignore[list-item]
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
        scope = FScope(node, self._lookup_parent(), "function", node.name.value)
        if outer.kind == "class":
            scope.owner = outer
        outer.defs[node.name.value] = scope
        # A wrapper built with functools.wraps(p) around a parameter p of this function.
        for decorator in node.decorators:
            d = decorator.decorator
            if (isinstance(d, cst.Call) and self.flow.ctx.resolve(d.func) in WRAPS and d.args
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
            key = literal(index.value) if isinstance(index, cst.Index) else None
            holder = self.flow.lookup(target.value.value, scope) or scope
            holder.entries.setdefault(target.value.value, []).append((key, value, scope))
        elif isinstance(target, cst.Attribute) and value is not None:
            self._store(target.value, target.attr.value, value)

    def visit_Finally(self, node: cst.Finally) -> None:
        self.in_finally += 1

    def leave_Finally(self, node: cst.Finally) -> None:
        self.in_finally -= 1

    def _store(self, receiver: cst.BaseExpression, attr: str, value: cst.BaseExpression) -> None:
        if self.in_finally:
            self.flow._restored.add(attr)
        method = method_scope(self.scope)
        if method is not None and method.owner is not None and isinstance(receiver, cst.Name) \
                and receiver.value == first_param(method):
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
                self.scope.bound.add(dotted(alias.name).split(".")[0])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.scope.bound.add(alias.asname.name.value)
            else:
                self.scope.bound.add(dotted(alias.name))

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
            holder = self.flow.lookup(func.value.value, self.scope)
            if holder is None:
                return
            entries = holder.entries.setdefault(func.value.value, [])
            if func.attr.value == "setdefault" and len(node.args) == 2:
                entries.append((literal(node.args[0].value), node.args[1].value, self.scope))
            elif func.attr.value == "update":
                for arg in node.args:
                    if arg.keyword is not None:
                        entries.append((arg.keyword.value, arg.value, self.scope))
