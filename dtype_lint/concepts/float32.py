"""F1's configuration of the flow engine: float32 dtypes and the values cast to them.

The float32 rules ask where a hardcoded float32 goes (a ``dtype=`` default, a cast in a
layer's forward, an operand cast beside the input), and whether a dtype argument
follows another value's dtype instead (a cast back, which keeps what is there).

**Sources**: an expression that spells float32 in any framework's spelling
(``torch.float32``, ``torch.float``, ``jnp.float32``, ``"float32"``,
``np.dtype("float32")``: :func:`dtype_lint.core.dtypes.is_float32`); a ``.float()``
cast.

**Carriers**: a cast to a dtype (``x.to(d)``, ``x.type(d)``, ``x.astype(d)``,
``cast(x, d)``) carries what ``d`` holds ("a value cast to ..."), and so does a call
given ``dtype=d`` ("a value made in ..."); a move that names no dtype
(``x.to(device)``) carries what ``x`` holds.

**Sanitizers**: another value's dtype (``x.dtype``), and so the casts to it
(``.to(x.dtype)``, ``astype(x.dtype)``, ``cast(v, x.dtype)``: their dtype holds no
source, and a cast carries nothing of its receiver), ``.type_as(x)``; boolean and integer
results (comparisons, ``not``/``~``, ``.bool()``, ``.long()``, ``argmax``..., an
integer ``dtype=``: :func:`not_float_value`, :data:`INTEGER_RESULTS`, which the float32
rules read too). Values that only set parameter storage are the rules' own test
(the finders' sanitizers), not the flow's.

:data:`FLOAT32` reads names in the *may* reading with every propagator;
:data:`CAST_BACK` is how the float32 rules read a dtype argument: one binding, as the
traversal sees it (``orig = x.dtype`` ... ``.to(orig)``), whose values
:func:`other_dtype` then judges by their text (``dtype_lint.concepts.casts.follows_a_dtype``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import dtype_name, is_float32
from dtype_lint.core.flow.engine import Carry, FileFlow, FlowConfig
from dtype_lint.core.flow.scopes import FScope
from dtype_lint.frameworks.casts import TYPE_CAST_METHODS

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext

# Calls whose result is integers: float32 coordinates made into indices or buckets.
INTEGER_RESULTS = frozenset({"long", "int", "bucketize", "searchsorted", "argmax", "argmin", "argsort"})
_INTEGER_DTYPES = ("int", "bool", "long", "uint")


def not_float_value(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """A value with no floating dtype: a comparison, a negated or inverted mask, or an
    array made with an integer or boolean dtype (``torch.arange(n, dtype=torch.int64)``):
    casting it to float32 overrides no input's dtype."""
    if isinstance(expr, cst.Comparison):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.BitInvert, cst.Not)):
        return True
    if isinstance(expr, cst.Call):
        dtype = next((arg.value for arg in expr.args if arg.keyword is not None and arg.keyword.value == "dtype"),
                     None)
        if dtype is not None and isinstance(dtype, (cst.Name, cst.Attribute)):
            return _integer_dtype(dtype, ctx)
    return False


def _integer_dtype(dtype: cst.BaseExpression, ctx: FileContext) -> bool:
    return (ctx.resolve(dtype) or "").rsplit(".", 1)[-1].startswith(_INTEGER_DTYPES)


def other_dtype(expr: cst.BaseExpression, flow: FileFlow) -> bool:
    """Another value's dtype, by its text: the expression mentions ``dtype`` and spells no
    dtype (``x.dtype``, ``orig_dtype``, ``getattr(m, "dtype")``)."""
    return "dtype" in flow.ctx.module.code_for_node(expr).lower() and dtype_name(expr, flow.ctx) is None


def _dtype_argument(call: cst.Call, name: str | None) -> cst.BaseExpression | None:
    """The dtype a cast is given: ``x.to(d)``, ``x.to(device, d)``, ``dtype=d``, ``cast(x, d)``."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dtype":
            return arg.value
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    if name == "cast":
        return positional[1] if len(positional) > 1 else None
    if not positional or name not in TYPE_CAST_METHODS:
        return None
    last = positional[-1]
    if name == "to" and (isinstance(last, cst.SimpleString) or "device" in _text(last)):
        return None  # `x.to("cuda")`, `x.to(device)`: a move
    return last


def _text(node: cst.BaseExpression) -> str:
    return node.value if isinstance(node, cst.Name) else node.attr.value if isinstance(node, cst.Attribute) else ""


class Float32Config(FlowConfig):
    """Sources: float32 dtypes and values cast to them (see the module's docs)."""

    def __init__(self, ordered: bool = False, max_depth: int = 8) -> None:
        self.ordered = ordered
        self.max_depth = max_depth

    def sanitizes(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> bool:
        if not_float_value(expr, flow.ctx):
            return True
        if isinstance(expr, cst.Attribute):
            return expr.attr.value == "dtype"  # another value's dtype
        if isinstance(expr, cst.Call):
            name = _last(expr.func)
            if name in INTEGER_RESULTS or name in ("bool", "type_as"):
                return True
            dtype = _dtype_argument(expr, name)
            return dtype is not None and _integer_dtype(dtype, flow.ctx)
        return False

    def source(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> str | None:
        if is_float32(expr, flow.ctx):
            return f"float32 ({flow.ctx.module.code_for_node(expr)})"
        return None

    def call(self, flow: FileFlow, call: cst.Call, scope: FScope | None) -> str | Carry | None:
        kind = self.source(flow, call, scope)
        if kind:
            return kind
        name = _last(call.func)
        if name == "float" and isinstance(call.func, cst.Attribute) and not call.args:
            return "a .float() cast"
        dtype = _dtype_argument(call, name)
        if dtype is not None:  # a cast, or a value made with `dtype=`
            return Carry((dtype,), "a value cast to {}" if name in TYPE_CAST_METHODS or name == "cast"
                         else "a value made in {}")
        if name == "to" and isinstance(call.func, cst.Attribute):
            return Carry((call.func.value,))  # a device move keeps the dtype
        return None


def _last(func: cst.BaseExpression) -> str | None:
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None


FLOAT32 = Float32Config()
CAST_BACK = Float32Config(ordered=True, max_depth=1)
