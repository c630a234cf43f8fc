"""The flow engine: scopes, bindings and propagators of one file, and the sources that
reach an expression under a configuration (:class:`FlowConfig`).

The engine knows how values move in Python code; a configuration says which values
matter. :meth:`FileFlow.sources` follows an expression back to what it may hold:

* **names**, looked up through the enclosing function scopes like Python does (class
  bodies skipped). Two readings, chosen by the configuration: *may* (every value the
  name is ever given in its scope: ``fn = fn or (lambda x: x)`` keeps both; tuple
  targets, loops, ``+=`` bind it to something unknown), or *ordered* (the binding that
  holds where the traversal stands now, as :meth:`FileContext.lookup_binding` keeps
  it: the last ``x = ...``, ``x: T = ...``, ``with ... as x`` or parameter annotation
  entered);
* **branches**: ``x or y``, ``x and y``, conditional expressions;
* **displays**: the elements of tuple, list, set and dict displays;
* **attributes**: ``self.attr = value`` in any method of the same class, read back as
  ``self.attr`` (and ``setattr(self, "attr", value)``);
* **returns**: a call of a function of the file, or of a method of the same class
  through ``self``, holds what the function returns (a source keeps where it was made:
  :attr:`Source.at` puts a factory's lambda where it is written);
* **carriers**: calls the configuration names that keep what their arguments hold
  (``functools.partial(f)``, ``deepcopy(m)``, ``m.cuda()``), with a template that says
  how (``"a copy of a module ({})"``).

A configuration also names the **sources** (a lambda, a module construction, a float32
dtype), the **sanitizers** that stop the flow (a cast to another value's dtype), what a
name alone says when its bindings say nothing (``named``), and how deep to follow.
The **sinks** are the rules' own: they ask :meth:`FileFlow.sources` for an argument,
:meth:`FileFlow.keyword_sources` for what ``**d`` passes as one keyword, and
:meth:`FileFlow.values` for the values a name holds.

The scopes are built from one walk of the module, the first time a *may* question is
asked (:meth:`FileFlow.of`, cached on the FileContext); *may* answers are cached per
(configuration, expression, scope). *Ordered* answers depend on where the traversal
stands, so they are neither built from the walk nor cached.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

from dtype_lint.core.confidence import rank
from dtype_lint.core.deferred import cst
from dtype_lint.core.flow.scopes import Collector, FScope, first_param, literal, method_scope

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext

_MAX_DEPTH = 8
# The engine's propagators a configuration may turn on (names and carriers always apply).
PROPAGATORS = frozenset({"branches", "displays", "attributes", "returns"})


@dataclasses.dataclass(frozen=True)
class Source:
    """A value of interest reaching an expression: ``node`` is where it enters the
    queried expression (the expression itself, a branch or an element of it), ``kind``
    says what it is ("a lambda", "a local function 'f'", "torch.nn.Linear is a torch
    module", ...)."""

    node: cst.CSTNode
    kind: str
    # Where the value is made (the lambda, the nested def...), and whether the flow brought
    # it out of a function the file calls (a factory's return).
    made: cst.CSTNode | None = None
    returned: bool = False
    steps: tuple = ()  # where another file shows it (core.finding.Step): a factory there
    # How sure the flow is that it is a source (core.confidence): a name's convention
    # (a configuration's ``named``) is medium, what the code shows is high.
    confidence: str = "high"
    basis: str = ""

    @property
    def at(self) -> cst.CSTNode:
        """Where a finding about this source belongs: a lambda a factory returns
        (``def default_transforms(self): return lambda ...``) or a parameter's default
        lambda where it is written, once, since that is what to replace; anything else, a
        closure a wrapper factory makes from its arguments included, where it enters the
        sink."""
        return self.made if self.returned and isinstance(self.made, cst.Lambda) else self.node

    def entering(self, node: cst.CSTNode, kind: str | None = None, returned: bool = False) -> "Source":
        """The same value entering the larger expression ``node`` (as ``kind``)."""
        return Source(node, kind or self.kind, self.made or self.node, self.returned or returned, self.steps,
                      self.confidence, self.basis)


@dataclasses.dataclass(frozen=True)
class Carry:
    """A call that keeps what ``exprs`` hold; its source's kind is ``template`` with the
    inner kind in place of ``{}``, and its confidence at most ``confidence`` (a carrier
    that makes the value less surely the hazard's: a copy of a model is not the model)."""

    exprs: tuple[cst.BaseExpression, ...]
    template: str = "{}"
    confidence: str = "high"


class FlowConfig:
    """What one family asks of the engine. Subclasses override the hooks they need; the
    defaults find nothing, stop nothing and carry nothing.

    ``ordered``: names read as the traversal sees them now (see the module's docs), else
    every value given in the scope. ``max_depth``: how many steps (a binding, a branch,
    a carried argument) to follow. ``propagators``: which of :data:`PROPAGATORS` apply.
    """

    ordered: bool = False
    max_depth: int = _MAX_DEPTH
    propagators: frozenset[str] = PROPAGATORS
    what: str = ""  # the sources, in words (a rule's docs page names them)

    def sanitizes(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> bool:
        """Whether ``expr`` stops the flow (nothing it holds is of interest)."""
        return False

    def source(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> str | None:
        """The kind of source ``expr`` (not a call) is by itself, or None."""
        return None

    def name(self, flow: FileFlow, name: str, found: FScope) -> str | Source | None:
        """*May* reading: the kind of source ``name`` is, by how ``found`` (the scope that
        binds it) binds it (a local ``def``, a parameter), before its values are followed."""
        return None

    def bound(self, flow: FileFlow, value: cst.BaseExpression) -> str | None:
        """*Ordered* reading: the kind of source a name's binding is by itself (a
        parameter's annotation), before the binding is followed."""
        return None

    def named(self, flow: FileFlow, expr: cst.BaseExpression) -> str | None:
        """What a name or attribute alone says, when what it is bound to says nothing."""
        return None

    def call(self, flow: FileFlow, call: cst.Call, scope: FScope | None) -> str | Source | Carry | None:
        """A call that is a source (its kind, or the :class:`Source` itself where it
        carries steps in another file), that carries what some expressions hold (a
        :class:`Carry`), or neither (None: then the returns propagator may apply)."""
        return None


class FileFlow:
    """The file's scopes and bindings, and the sources that reach an expression."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self._root: FScope | None = None
        self.by_node: dict[int, FScope] = {}
        # class name -> attribute -> [(value, the method scope that stored it)]
        self.attrs: dict[str, dict[str, list[tuple[cst.BaseExpression, FScope]]]] = {}
        self._cache: dict[tuple[FlowConfig, int, int], list[Source]] = {}
        # Attribute names set back in a `finally` block (`obj.forward = original`,
        # `setattr(obj, name, original)`): a store there is a temporary swap.
        self._restored: set[str] = set()

    @classmethod
    def of(cls, ctx: FileContext) -> FileFlow:
        """The file's flow, made on the first question and kept on the context."""
        flow = ctx.__dict__.get("_flow")
        if flow is None:
            flow = ctx.__dict__["_flow"] = cls(ctx)
        return flow

    # -- the file's scopes, from one walk made on first use ----------------------------

    @property
    def root(self) -> FScope:
        if self._root is None:
            from dtype_lint.core.traversal import walk

            self._root = FScope(self.ctx.module, None, "module", "<module>")
            self.by_node[id(self.ctx.module)] = self._root
            for _ in walk(self.ctx.module.body, [Collector(self)]):
                pass
        return self._root

    @property
    def restored(self) -> set[str]:
        """Attribute names the file sets back in a ``finally`` block."""
        self.root  # noqa: B018 - the walk fills it
        return self._restored

    def here(self) -> FScope:
        """The scope the traversal is in now (the innermost function or lambda)."""
        root = self.root
        for scope in reversed(self.ctx.scopes):
            found = self.by_node.get(id(scope.node))
            if found is not None:
                return found
        return root

    # -- queries ----------------------------------------------------------------------

    def sources(self, expr: cst.BaseExpression, config: FlowConfig, scope: FScope | None = None,
                attributes: bool = True) -> list[Source]:
        """The sources (of ``config``) ``expr`` may hold, each with where it enters
        ``expr``; ``attributes=False``: not what ``self.attr`` holds."""
        if not attributes and isinstance(expr, cst.Attribute):
            return []
        if config.ordered:
            return self._sources(expr, config, None, 0, frozenset())
        return self._sources(expr, config, scope or self.here(), 0, frozenset())

    def values(self, expr: cst.BaseExpression, config: FlowConfig,
               scope: FScope | None = None) -> Iterator[cst.BaseExpression]:
        """The values ``expr`` may hold, followed through names as ``config`` reads them
        (``expr`` itself when it is not a name or its binding is unknown)."""
        where = None if config.ordered else scope or self.here()
        return self._values(expr, where, 0, frozenset(), config.max_depth, config.ordered)

    def keyword_sources(self, call: cst.Call, keyword: str, config: FlowConfig,
                        scope: FScope | None = None) -> list[Source]:
        """The sources that ``**d`` arguments of ``call`` may pass as ``keyword=`` (entries
        of ``d`` under that key, or under a key that is not a literal), each reported
        where the entry is stored (*may* reading)."""
        scope = scope or self.here()
        out: list[Source] = []
        for arg in call.args:
            if arg.star == "**":
                for key, value, where in self._entries(arg.value, scope, 0, frozenset()):
                    if key in (None, keyword):
                        out += self._sources(value, config, where, 0, frozenset())
        return out

    def constructed_class(self, expr: cst.BaseExpression, scope: FScope | None = None) -> str | None:
        """The name of the class whose instance ``expr`` holds, when a binding in the file
        says so: ``cls(...)`` in a classmethod, ``type(self)(...)``, or ``C(...)`` of a
        class named in CapWords."""
        scope = scope or self.here()
        for value in self._values(expr, scope, 0, frozenset()):
            if not isinstance(value, cst.Call):
                continue
            func = value.func
            method = method_scope(scope)
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

    def lookup(self, name: str, scope: FScope) -> FScope | None:
        """The scope that binds ``name`` as seen from ``scope``."""
        current: FScope | None = scope
        while current is not None:
            if (name in current.values or name in current.bound or name in current.params
                    or name in current.defs or name in current.classes):
                return current
            current = current.parent
        return None

    # -- the analysis -----------------------------------------------------------------

    def _values(self, expr: cst.BaseExpression, scope: FScope | None, depth: int, seen: frozenset,
                max_depth: int = _MAX_DEPTH, ordered: bool = False) -> Iterator[cst.BaseExpression]:
        """``expr`` itself, or for a name every value it is given in its scope (*ordered*:
        the binding that holds now)."""
        if isinstance(expr, cst.Name) and depth < max_depth:
            if ordered:
                bound = self.ctx.lookup_binding(expr.value)
                if bound is not None:
                    yield from self._values(bound, None, depth + 1, seen, max_depth, ordered)
                    return
            else:
                found = self.lookup(expr.value, scope)  # type: ignore[arg-type]
                if found is not None and expr.value in found.values:
                    if (id(found), expr.value) not in seen:
                        for value in found.values[expr.value]:
                            yield from self._values(value, found, depth + 1, seen | {(id(found), expr.value)},
                                                    max_depth)
                    return
        yield expr

    def _sources(self, expr: cst.BaseExpression, config: FlowConfig, scope: FScope | None, depth: int,
                 seen: frozenset) -> list[Source]:
        if depth > config.max_depth:
            return []
        if config.ordered:  # depends on where the traversal stands: bounded by depth alone
            return self._sources_of(expr, config, scope, depth, seen)
        if id(expr) in seen:
            return []
        key = (config, id(expr), id(scope))  # the config itself: kept alive, never confused
        if key in self._cache:
            return self._cache[key]
        out = self._sources_of(expr, config, scope, depth, seen | {id(expr)})
        self._cache[key] = out
        return out

    def _first(self, expr: cst.BaseExpression, config: FlowConfig, scope: FScope | None, depth: int,
               seen: frozenset) -> Source | None:
        for source in self._sources(expr, config, scope, depth, seen):
            return source
        return None

    def _sources_of(self, expr: cst.BaseExpression, config: FlowConfig, scope: FScope | None, depth: int,
                    seen: frozenset) -> list[Source]:
        if config.sanitizes(self, expr, scope):
            return []
        if isinstance(expr, cst.Call):
            found = self._call_kind(expr, config, scope, depth, seen)
            return [found] if found else []
        kind = config.source(self, expr, scope)
        if kind:
            return [Source(expr, kind)]
        propagators = config.propagators
        if isinstance(expr, cst.Name):
            found = self._name_kind(expr.value, config, scope, depth, seen)
            kind = None if found else config.named(self, expr)
            return [found.entering(expr)] if found else [_by_name(expr, kind)] if kind else []
        if isinstance(expr, cst.Attribute):
            found = self._attribute_kind(expr, config, scope, depth, seen) if "attributes" in propagators else None
            kind = None if found else config.named(self, expr)
            return [found.entering(expr)] if found else [_by_name(expr, kind)] if kind else []
        if isinstance(expr, cst.IfExp) and "branches" in propagators:
            return (self._sources(expr.body, config, scope, depth + 1, seen)
                    + self._sources(expr.orelse, config, scope, depth + 1, seen))
        if isinstance(expr, cst.BooleanOperation) and "branches" in propagators:
            return (self._sources(expr.left, config, scope, depth + 1, seen)
                    + self._sources(expr.right, config, scope, depth + 1, seen))
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set, cst.Dict)) and "displays" in propagators:
            out: list[Source] = []
            for element in expr.elements:
                out += self._sources(element.value, config, scope, depth + 1, seen)
            return out
        return []

    def _name_kind(self, name: str, config: FlowConfig, scope: FScope | None, depth: int,
                   seen: frozenset) -> Source | None:
        if config.ordered:
            bound = self.ctx.lookup_binding(name)
            if bound is None:
                return None
            kind = config.bound(self, bound)
            return Source(bound, kind) if kind else self._first(bound, config, None, depth + 1, seen)
        found = self.lookup(name, scope)  # type: ignore[arg-type]
        if found is None:
            return None
        kind = config.name(self, name, found)
        if isinstance(kind, Source):
            return kind
        if kind:
            made = found.defs[name].node if name in found.defs else found.classes.get(name)
            return Source(made or found.node, kind)
        for value in found.values.get(name, ()):
            source = self._first(value, config, found, depth + 1, seen)
            if source:
                return source
        return None

    def _attribute_kind(self, expr: cst.Attribute, config: FlowConfig, scope: FScope | None, depth: int,
                        seen: frozenset) -> Source | None:
        """``self.attr`` in a method: what any method of the class stores there."""
        if not isinstance(expr.value, cst.Name) or scope is None:
            return None
        method = method_scope(scope)
        if method is None or method.owner is None or expr.value.value != first_param(method):
            return None
        for value, where in self.attrs.get(method.owner.name, {}).get(expr.attr.value, ()):
            source = self._first(value, config, where, depth + 1, seen)
            if source:
                return source
        return None

    def _call_kind(self, call: cst.Call, config: FlowConfig, scope: FScope | None, depth: int,
                   seen: frozenset) -> Source | None:
        found = config.call(self, call, scope)
        if isinstance(found, str):
            return Source(call, found)
        if isinstance(found, Source):
            return found
        if isinstance(found, Carry):
            for expr in found.exprs:
                source = self._first(expr, config, scope, depth + 1, seen)
                if source:
                    entered = source.entering(call, found.template.format(source.kind))
                    if rank(found.confidence) < rank(entered.confidence):
                        entered = dataclasses.replace(entered, confidence=found.confidence, basis=entered.kind)
                    return entered
            return None
        if "returns" not in config.propagators or scope is None:
            return None
        method = method_scope(scope)
        if (isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and method is not None
                and method.owner is not None and call.func.value.value == first_param(method)):
            # self.make_fn(): a method of the same class used as a factory.
            function = method.owner.defs.get(call.func.attr.value)
            for value in function.returns if function is not None else ():
                source = self._first(value, config, function, depth + 1, seen)
                if source:
                    return source.entering(call, f"{source.kind} returned by self.{call.func.attr.value}()", True)
            return None
        if isinstance(call.func, cst.Name):
            name = call.func.value
            where = self.lookup(name, scope)
            function = where.defs.get(name) if where is not None else None
            for value in function.returns if function is not None else ():
                source = self._first(value, config, function, depth + 1, seen)
                if source:
                    return source.entering(call, f"{source.kind} returned by {name}()", True)
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
                    yield literal(element.key), element.value, scope
                else:  # **other
                    yield from self._entries(element.value, scope, depth + 1, seen)
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict":
            for arg in expr.args:
                if arg.keyword is not None:
                    yield arg.keyword.value, arg.value, scope
                else:
                    yield from self._entries(arg.value, scope, depth + 1, seen)
        elif isinstance(expr, cst.Name):
            found = self.lookup(expr.value, scope)
            if found is None or (id(found), expr.value) in seen:
                return
            seen = seen | {(id(found), expr.value)}
            for key, value, where in found.entries.get(expr.value, ()):
                yield key, value, where
            for value in found.values.get(expr.value, ()):
                yield from self._entries(value, found, depth + 1, seen)


def _by_name(expr: cst.BaseExpression, kind: str) -> Source:
    """A source a configuration infers from how a name is written or used (``named``),
    not from a value the code gives it: a convention, so medium confidence."""
    return Source(expr, kind, confidence="medium", basis=kind)
