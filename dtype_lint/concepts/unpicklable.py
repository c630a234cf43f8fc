"""F2's configuration of the flow engine: values that pickle cannot store by reference.

The pickling rules ask one question at each of their sinks (a process target or its
``args``, a pool's function, a ``DataLoader`` callable, an attribute stored on an object
that is pickled whole): *may this expression hold something pickle cannot store by
reference?* :data:`PICKLING` answers it with every propagator of the engine, in the
*may* reading (every value a name is given in its scope).

**Sources** (values with no importable name):

* a ``lambda``; a generator expression;
* a function or class defined inside a function (a nested ``def``/``class``);
* a call of a generator function of the file (a generator object); an instance of a
  local class;
* a call of a function of the file, or of a method of the same class through ``self``,
  that returns one of these (a factory returning a local function: the engine's
  returns propagator), or of a function of another file that does (the project
  model's summary of it says what it returns, and where);
* inside a decorator, the function it decorates when the wrapper is built with
  ``functools.wraps(func)``: the module attribute of that name now holds the wrapper,
  so pickle, which looks ``func`` up by its qualified name, finds another object;
* a parameter that holds a generator: named ``generator``/``gen``/``*_generator`` or
  annotated ``Generator``/``Iterator``, in a function that iterates it or yields.

**Carriers**: a ``functools.partial`` (or ``wraps(f)(g)``) holding any of these, a method
bound from one (``types.MethodType(f, obj)``), and a
container that keeps the callables it is given (``transforms.Lambda(...)``,
``Compose([...])``, ``defaultdict(factory)``).

**Sanitizers** (what the *may* reading finds nothing in): a parameter (its value comes
from the caller: unknown, so clean), an import, anything defined at module level, a
method reached through ``self``; for attribute stores, an attribute the file sets back
in a ``finally`` block (a temporary swap, see :attr:`FileFlow.restored`).
"""

from __future__ import annotations

from dtype_lint.core.deferred import cst
from dtype_lint.core.flow.engine import Carry, FileFlow, FlowConfig, Source
from dtype_lint.core.flow.scopes import WRAPS, FScope, dotted

_PARTIALS = frozenset({"functools.partial", "partial"})
_METHOD_TYPES = frozenset({"types.MethodType", "MethodType"})
# Containers that keep the callables they are given (torchvision's `transforms.Lambda`
# and `transforms.Compose`, and look-alikes of the same names; `defaultdict`, which keeps
# its default factory): what they are built from flows into them.
# Objects that keep the callables they are given (transforms, factories, lambda schedulers).
HOLDERS = frozenset({"Lambda", "Compose", "defaultdict", "LambdaLR", "MultiplicativeLR"})
_GENERATOR_NAMES = ("generator", "gen")
_GENERATOR_TYPES = ("Generator", "Iterator", "AsyncGenerator", "AsyncIterator")


class PicklingConfig(FlowConfig):
    """Sources: values with no importable name (see the module's docs).
    ``imported_factories``: whether a call of another file's function that returns a
    callable of its own is a source (its sinks' prefilters see such calls)."""

    imported_factories = True
    what = ("a value pickle cannot store by reference (a lambda, a local function or class, a generator, a "
            "partial or bound method of one, what a factory of this file or another returns)")

    def source(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> str | None:
        if isinstance(expr, cst.Lambda):
            return "a lambda"
        if isinstance(expr, cst.GeneratorExp):
            return "a generator"
        return None

    def name(self, flow: FileFlow, name: str, found: FScope) -> str | Source | None:
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
            default = found.params[name].default
            if isinstance(default, cst.Lambda):
                # What a caller that omits the argument passes: medium, as a caller may
                # always pass one.
                return Source(default, f"a lambda (the default of parameter '{name}')", default, True,
                              confidence="medium", basis=f"the default of '{name}', used where a caller omits it")
        return None

    def call(self, flow: FileFlow, call: cst.Call, scope: FScope | None) -> str | Carry | None:
        qualified = flow.ctx.resolve(call.func)
        if qualified in _PARTIALS:
            return Carry(tuple(arg.value for arg in call.args), "a functools.partial of {}")
        if qualified and qualified.rsplit(".", 1)[-1] in HOLDERS:
            return Carry(tuple(arg.value for arg in call.args), f"{{}} held by {qualified.rsplit('.', 1)[-1]}(...)")
        # A method bound from a function (`types.MethodType(f, obj)`) pickles the function
        # by its qualified name.
        if qualified in _METHOD_TYPES and call.args:
            return Carry((call.args[0].value,), "a method bound from {}")
        # functools.wraps(f)(g) is g.
        if isinstance(call.func, cst.Call) and flow.ctx.resolve(call.func.func) in WRAPS and call.args:
            return Carry((call.args[0].value,))
        if isinstance(call.func, cst.Name) and scope is not None:
            name = call.func.value
            found = flow.lookup(name, scope)
            if found is not None and name in found.classes and found.nested:
                return f"an instance of the local class '{name}'"
            function = found.defs.get(name) if found is not None else None
            if function is not None and function.yields:
                return f"a generator (from {name}())"
        return _imported_factory(flow, call, qualified) if self.imported_factories else None


class _InFilePickling(PicklingConfig):
    """For sinks whose prefilter cannot see another file's factories (DTL204's stores:
    its whole-file test asks for a local callable in the file)."""

    imported_factories = False
    what = ("a value pickle cannot store by reference (a lambda, a local function or class, a generator, a "
            "partial or bound method of one, what a factory of this file returns)")


PICKLING = PicklingConfig()
PICKLING_IN_FILE = _InFilePickling()


def _imported_factory(flow: FileFlow, call: cst.Call, qualified: str | None) -> Source | None:
    """A call of a function of another file that returns a callable of its own (the
    project model's summary of it): what it returns, with the step that shows where."""
    view = flow.ctx.view
    if view is None or not qualified or isinstance(call.func, cst.Call) or qualified.rsplit(".", 1)[-1][:1].isupper():
        return None
    found = view.local(flow.ctx.source or flow.ctx.module.code, qualified, flow.ctx.file_tree())
    if found is None or found.path == view.path:
        return None  # the file's own functions: the engine's returns propagator follows them
    returned = view.returns_local(found)
    if returned is None:
        return None
    what, step = returned
    kind = f"{what} returned by {dotted(call.func)}() ({step.path}:{step.line})"
    return Source(call, kind, returned=True, steps=(step,))


def _holds_generator(scope: FScope, name: str) -> bool:
    """A parameter that holds a generator: so named or annotated, in a function that
    iterates it or is a generator itself (a pipeline stage)."""
    if not (name in scope.iterated or scope.yields):
        return False
    param = scope.params[name]
    annotation = param.annotation.annotation if param.annotation is not None else None
    if annotation is not None:
        return dotted(annotation).rsplit(".", 1)[-1] in _GENERATOR_TYPES
    return name in _GENERATOR_NAMES or name.endswith(tuple(f"_{n}" for n in _GENERATOR_NAMES))
