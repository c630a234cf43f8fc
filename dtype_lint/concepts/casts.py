"""What is a cast, and to which dtype: ``x.half()``, ``x.to(d)``, ``x.astype(d)``, a
creation given a dtype, and a dtype argument that follows another value's dtype (a cast
back) rather than choosing one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dtype_lint.concepts.float32 import CAST_BACK, other_dtype
from dtype_lint.core.calls import argument, callee_name, method_name
from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import dtype_name
from dtype_lint.core.flow.engine import FileFlow
from dtype_lint.frameworks.casts import CAST_METHODS, TYPE_CAST_METHODS

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext

# Array constructors that take a dtype positionally (`jnp.asarray(x, jnp.float32)`,
# `jnp.zeros(shape, dtype)`, `jax.random.normal(key, shape, dtype)`).
ARRAY_CREATORS = frozenset({"array", "asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "eye",
                            "tensor", "as_tensor", "normal", "uniform", "zeros_like", "ones_like", "full_like",
                            "empty_like"})
_METHOD_DTYPES = {"half": "float16", "bfloat16": "bfloat16", "double": "float64", "float": "float32"}


def positional_dtype(call: cst.Call, ctx: FileContext) -> cst.BaseExpression | None:
    """For an array constructor, a positional argument after the first that names a
    dtype (a spelled one, or one whose text mentions ``dtype``)."""
    if callee_name(call) not in ARRAY_CREATORS:
        return None
    for arg in call.args[1:]:
        if arg.keyword is not None or arg.star:
            break
        if dtype_name(arg.value, ctx) or "dtype" in ctx.module.code_for_node(arg.value).lower():
            return arg.value
    return None


def follows_a_dtype(node: cst.BaseExpression, ctx: FileContext) -> bool:
    """A dtype argument that follows something: its text mentions ``dtype``
    (``x.dtype``, ``self.dtype``), or it is a name bound to such a value
    (``orig_type = x.dtype`` ... ``.to(orig_type)``)."""
    if "dtype" in ctx.module.code_for_node(node).lower():
        return True
    flow = FileFlow.of(ctx)
    return isinstance(node, cst.Name) and any(other_dtype(value, flow) for value in flow.values(node, CAST_BACK))


def names_dtype(node: cst.BaseExpression, ctx: FileContext) -> bool:
    """True when the expression is, or evidently computes, a dtype (not a device)."""
    if dtype_name(node, ctx):
        return True
    if isinstance(node, cst.Call) and ctx.resolve(node.func) == "getattr" and node.args:
        return ctx.resolve(node.args[0].value) in ("torch", "jax.numpy", "numpy")
    return "dtype" in ctx.module.code_for_node(node).lower()


def cast_target(call: cst.Call, ctx: FileContext) -> cst.BaseExpression | None:
    """For a cast call (``x.half()``, ``x.to(dtype)``, ``x.astype(d)``...), the receiver."""
    name = method_name(call)
    if name is None:
        return None
    receiver = call.func.value  # type: ignore[union-attr]
    if name in CAST_METHODS and not call.args:
        return receiver
    if name in TYPE_CAST_METHODS:
        dtype = argument(call, 0, "dtype")
        if name == "to" and dtype is None:
            dtype = argument(call, 1, None)  # .to(device, dtype)
        if dtype is not None and names_dtype(dtype, ctx):
            return receiver
    return None


def cast_dtype_name(call: cst.Call, ctx: FileContext) -> str | None:
    """For a cast call, the canonical dtype it casts to, when it is spelled out."""
    name = method_name(call)
    if name in _METHOD_DTYPES and not call.args:
        return _METHOD_DTYPES[name]
    if name in TYPE_CAST_METHODS:
        dtype = argument(call, 0, "dtype")
        if name == "to" and (dtype is None or not names_dtype(dtype, ctx)):
            dtype = argument(call, 1, None)
        return dtype_name(dtype, ctx) if dtype is not None else None
    return None
