"""Recognising dtype expressions in every spelling the frameworks accept.

``torch.float32``, ``torch.float``, ``jnp.float32``, ``np.float32``, ``tf.float32``,
``"float32"``, ``np.dtype("float32")`` and an alias such as ``from torch import
float32 as f32`` all name the same dtype; the rules compare names, not spellings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dtype_lint.core.deferred import cst

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext


FRAMEWORK_ROOTS = frozenset({"torch", "jax", "numpy", "tensorflow", "ml_dtypes", "flax", "jnp", "np", "tf"})

# Attribute spellings by canonical name. `float`, `half` and `double` are dtypes only in
# torch: `np.float` is gone and the builtin `float` means float64 to NumPy and JAX.
_ATTRIBUTES = {"float32": "float32", "single": "float32", "float16": "float16",
               "bfloat16": "bfloat16", "float64": "float64"}
_TORCH_ATTRIBUTES = {"float": "float32", "half": "float16", "double": "float64"}
_STRINGS = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
            "float64": "float64", "half": "float16", "double": "float64", "single": "float32"}
LOW_PRECISION = frozenset({"float16", "bfloat16"})


def dtype_name(node: cst.BaseExpression, ctx: FileContext) -> str | None:
    """The canonical dtype name an expression spells, or None if it spells none."""
    if isinstance(node, cst.SimpleString):
        return _STRINGS.get(_string_value(node))
    if isinstance(node, cst.Call):
        # np.dtype("float32"), jnp.dtype(jnp.float32)
        qualified = ctx.resolve(node.func)
        if qualified and qualified.split(".")[-1] == "dtype" and len(node.args) == 1:
            root = qualified.split(".")[0]
            if root in FRAMEWORK_ROOTS:
                return dtype_name(node.args[0].value, ctx)
        return None
    if not isinstance(node, (cst.Name, cst.Attribute)):
        return None
    qualified = ctx.resolve(node)
    if not qualified or "." not in qualified:
        return None
    root, attr = qualified.split(".")[0], qualified.rsplit(".", 1)[-1]
    if root not in FRAMEWORK_ROOTS and not _numpy_shim(qualified):
        return None
    if root == "torch" and attr in _TORCH_ATTRIBUTES:
        return _TORCH_ATTRIBUTES[attr]
    return _ATTRIBUTES.get(attr)


def _numpy_shim(qualified: str) -> bool:
    """A NumPy-compatible namespace another package re-exports (``trax.fastmath.numpy``,
    ``tensorflow.experimental.numpy``): its dtype attributes are NumPy's."""
    return "numpy" in qualified.split(".")[1:-1]


def is_float32(node: cst.BaseExpression, ctx: FileContext) -> bool:
    return dtype_name(node, ctx) == "float32"


def is_numpy_call(node: cst.BaseExpression, ctx: FileContext) -> bool:
    """``np.array(...)``, ``np.sum(...)``: a call that makes a host-side NumPy array."""
    if not isinstance(node, cst.Call):
        return False
    qualified = ctx.resolve(node.func)
    return bool(qualified) and qualified.split(".")[0] in ("numpy", "np")


def _string_value(node: cst.SimpleString) -> str:
    try:
        value = node.evaluated_value
    except Exception:  # a malformed escape is not a dtype
        return ""
    return value if isinstance(value, str) else ""
