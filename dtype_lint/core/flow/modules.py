"""F3's configuration of the flow engine: values that are modules (layers, models).

The recasting rules ask of a receiver *is this a module?* (``model.half()`` casts a
whole model; ``x.half()`` casts a tensor). :class:`ModulesConfig` answers it in the
*ordered* reading: a name holds the binding in force where the rule stands (the last
assignment, ``with ... as`` or parameter annotation), followed at most four steps.

**Sources**:

* a construction of a module class: ``torch.nn`` (``nn.Linear(...)``), a class of the
  file or of the project deriving from one (:func:`module_type`);
* ``self`` in a method of a module class;
* a class imported from a package of models or layers (``mypkg.models.ResNet(...)``),
  a factory or loader named for a model (``build_model(...)``, ``from_pretrained``):
  see :func:`dtype_lint.core.roles.models_path` and
  :func:`dtype_lint.core.roles.factory_name`;
* a binding to a module class by itself: a parameter annotated ``nn.Module``;
* what a name alone says, when its binding says nothing (``named``, from
  :meth:`dtype_lint.core.roles.Roles.module_reason`: a name the file uses as a module,
  one named in ``module-names``).

**Carriers**: ``deepcopy(m)``/``copy(m)`` ("a copy of a module (...)"), device and
mode moves (``m.cuda()``, ``m.to(device)``, ``m.eval()``: the same object).

**Sanitizers**: ``self`` in a class that is not a module. The family's other
sanitizers (inference contexts: ``no_grad``, ``inference_mode``, ``eval()`` without a
later ``train()``; a state dict written to a file) are conditions on the *path* of a
cast, not on the value: :meth:`dtype_lint.core.roles.Roles.path` holds them.

:data:`PARAMETER_TREES` asks the same engine whether a dict holds a model's parameters
or state (a ``state_dict()``, a loaded checkpoint, a name that says so), for DTL302.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dtype_lint.core import roles as _roles
from dtype_lint.core.deferred import cst
from dtype_lint.core.flow.engine import Carry, FileFlow, FlowConfig, FScope

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext


def module_type(expr: cst.BaseExpression, ctx: FileContext) -> str | None:
    """Why the class (or constructor) ``expr`` names is a torch module, or None."""
    qualified = ctx.resolve(expr)
    if qualified is None:
        return None
    last = qualified.rsplit(".", 1)[-1]
    if qualified.startswith("torch.nn.") and last[:1].isupper() and not last.startswith("Parameter"):
        return f"{qualified} is a torch module"
    if "torch_module" in ctx.kinds_of(qualified):
        return f"{qualified} is a torch module"
    return None


class ModulesConfig(FlowConfig):
    """Sources: modules (see the module's docs). ``named``: what a name or attribute
    alone says (the caller's heuristics), or None for nothing. ``factories=False``:
    only constructions of module classes (no models packages, factories, copies or
    moves). The rules read names *ordered* with no other propagator (what
    ``Roles.module_reason`` has always followed); ``ordered=False`` and
    ``propagators`` turn on the engine's others."""

    max_depth = 4

    def __init__(self, named: Callable[[cst.BaseExpression], str | None] | None = None,
                 factories: bool = True, ordered: bool = True,
                 propagators: frozenset[str] = frozenset()) -> None:
        self._named = named
        self.factories = factories
        self.ordered = ordered
        self.propagators = propagators

    def _self_module(self, flow: FileFlow) -> bool:
        cls = flow.ctx.method_class()
        return bool(cls and "torch_module" in cls.kinds)

    def sanitizes(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> bool:
        return isinstance(expr, cst.Name) and expr.value == "self" and not self._self_module(flow)

    def source(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> str | None:
        if isinstance(expr, cst.Name) and expr.value == "self":
            return "'self' is a module here"  # the sanitizer let it through: a module's method
        return None

    def bound(self, flow: FileFlow, value: cst.BaseExpression) -> str | None:
        return module_type(value, flow.ctx) if isinstance(value, (cst.Name, cst.Attribute)) else None

    def named(self, flow: FileFlow, expr: cst.BaseExpression) -> str | None:
        return self._named(expr) if self._named is not None else None

    def call(self, flow: FileFlow, call: cst.Call, scope: FScope | None) -> str | Carry | None:
        ctx = flow.ctx
        strong = module_type(call.func, ctx)
        if strong or not self.factories:
            return strong
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if name in ("deepcopy", "copy") and call.args:
            return Carry((call.args[0].value,), "a copy of a module ({})")
        qualified = ctx.resolve(func)
        if qualified and _roles.models_path(qualified):
            return f"{qualified} comes from a package of models"
        if _roles.factory_name(name) and name != "deepcopy":
            return f"{name}() returns a model"
        if isinstance(func, cst.Attribute) and name in _roles.DEVICE_MOVES:
            return Carry((func.value,))
        return None


# Words of a name that holds parameters or model state.
PARAMETER_WORDS = frozenset({"param", "params", "parameters", "weight", "weights", "state", "sd", "checkpoint",
                             "ckpt", "model", "variables", "tree", "master"})
# Calls whose result is a model's parameters or state.
_STATE_CALLS = frozenset({"state_dict", "named_parameters", "named_buffers", "load", "load_file", "load_state_dict"})


class ParameterTreesConfig(FlowConfig):
    """F3's other question, for a dict a recast may be applied to: does it hold a model's
    parameters or state? Sources: a ``state_dict()`` or a checkpoint loaded from a file,
    a name or attribute that says so (``params``, ``weights``, ``sd``, ``checkpoint``).
    Carriers: a method called on one (``sd.copy()``, ``ckpt.items()``). Read *ordered*,
    four steps, like the modules."""

    ordered = True
    max_depth = 4
    propagators: frozenset[str] = frozenset()

    def source(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> str | None:
        name = expr.value if isinstance(expr, cst.Name) else expr.attr.value if isinstance(expr, cst.Attribute) \
            else None
        if name is not None and _roles.words_of(name) & PARAMETER_WORDS:
            return f"'{name}' names parameters or state"
        return None

    def call(self, flow: FileFlow, call: cst.Call, scope: FScope | None) -> str | Carry | None:
        func = call.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in _STATE_CALLS:
                return f"{func.attr.value}() returns parameters or state"
            return Carry((func.value,))
        if isinstance(func, cst.Name) and func.value in _STATE_CALLS:
            return f"{func.value}() returns parameters or state"
        return None


PARAMETER_TREES = ParameterTreesConfig()
