"""What holds a model's parameters or state: the dict a state-dict recast is applied to.

A ``state_dict()`` or a checkpoint loaded from a file, a name or attribute that says so
(``params``, ``weights``, ``sd``, ``checkpoint``), and what a method called on one gives
(``sd.copy()``, ``ckpt.items()``): the flow engine with :data:`PARAMETER_TREES`, read
*ordered*, four steps, like the modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dtype_lint.core.deferred import cst
from dtype_lint.core.flow.engine import Carry, FileFlow, FlowConfig
from dtype_lint.core.flow.scopes import FScope
from dtype_lint.core.words import words_of

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext

# Words of a name that holds parameters or model state.
PARAMETER_WORDS = frozenset({"param", "params", "parameters", "weight", "weights", "state", "sd", "checkpoint",
                             "ckpt", "model", "variables", "tree", "master"})
# Calls whose result is a model's parameters or state.
_STATE_CALLS = frozenset({"state_dict", "named_parameters", "named_buffers", "load", "load_file", "load_state_dict"})


class ParameterTreesConfig(FlowConfig):
    """Sources: a ``state_dict()`` or a checkpoint loaded from a file, a name or attribute
    that says it holds parameters or state. Carriers: a method called on one."""

    ordered = True
    max_depth = 4
    propagators: frozenset[str] = frozenset()

    def source(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> str | None:
        name = expr.value if isinstance(expr, cst.Name) else expr.attr.value if isinstance(expr, cst.Attribute) \
            else None
        if name is not None and words_of(name) & PARAMETER_WORDS:
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


def parameter_dict(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """Whether a dict holds a model's parameters or state (not a cache of activations or
    features)."""
    return bool(FileFlow.of(ctx).sources(expr, PARAMETER_TREES))
