"""Framework-neutral dtype names: normalising torch/NumPy/JAX dtypes and short aliases.

Everything in :mod:`dtype_lint.runtime` compares dtypes by canonical name
(``"float32"``, ``"bfloat16"``) so that a policy or an expected dtype can be written
once and checked against torch tensors, JAX arrays and NumPy arrays alike, without
importing either framework. A dtype is recognised by what it is (a ``torch.dtype``, a
``numpy.dtype`` instance, a NumPy scalar type, a scalar type that carries its
``dtype``), never by the name of the module that defines its class: ml_dtypes moved
its dtype classes between releases, and a name test read them as "not a dtype".
"""

from __future__ import annotations

import re
import sys

_ALIASES = {
    "f64": "float64", "fp64": "float64", "double": "float64",
    "f32": "float32", "fp32": "float32", "float": "float32", "single": "float32",
    "f16": "float16", "fp16": "float16", "half": "float16",
    "bf16": "bfloat16",
}

# The IEEE and bfloat16 layouts; ml_dtypes' small floats spell theirs in the name
# (``float8_e4m3fn``: 4 exponent bits, 3 explicit mantissa bits).
_FIXED_MANTISSA = {"float64": 52, "float32": 23, "float16": 10, "bfloat16": 7}
_SMALL_FLOAT = re.compile(r"float(\d+)_e(\d+)m(\d+)")
_WIDTH = re.compile(r"b?float(\d+)")


def mantissa_bits(name: str) -> int:
    """Explicit mantissa bits (without the implicit leading one) of a floating dtype name."""
    if name in _FIXED_MANTISSA:
        return _FIXED_MANTISSA[name]
    match = _SMALL_FLOAT.match(name)
    if match is None:
        raise ValueError(f"not a floating dtype with a known layout: {name!r}")
    return int(match.group(3))


def width_bits(name: str) -> int | None:
    """Storage width in bits of a floating dtype name (``None`` for other dtypes)."""
    match = _WIDTH.match(name)
    return int(match.group(1)) if match else None


def dtype_name(obj: object) -> str:
    """Canonical name of a dtype, a dtype name/alias, or anything with a ``.dtype``.

    Accepts ``torch.bfloat16``, ``np.float32``, ``jnp.bfloat16``, ``np.dtype("f4")``,
    ml_dtypes' types (``ml_dtypes.float8_e4m3fn``), ``"bf16"``, a tensor or an array.
    Raises ``ValueError`` for what is none of these.
    """
    if isinstance(obj, str):
        key = obj.strip().lower()
        key = _ALIASES.get(key, key)
        return key.removeprefix("torch.")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.dtype):
        return str(obj).removeprefix("torch.")
    # A NumPy dtype or scalar type can only exist once NumPy is imported.
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(obj, np.dtype):
            return obj.name
        if isinstance(obj, type) and (issubclass(obj, np.generic) or obj in (float, int, bool, complex)):
            return np.dtype(obj).name
    # A tensor or an array, or a scalar type that carries its dtype (``jnp.bfloat16``).
    dtype = getattr(obj, "dtype", None)
    if dtype is not None and dtype is not obj:
        return dtype_name(dtype)
    raise ValueError(f"not a dtype: {obj!r} (of type {type(obj).__module__}.{type(obj).__qualname__})")


def is_floating(name: str) -> bool:
    """Whether a canonical dtype name is a real floating type (complex is not)."""
    return width_bits(name) is not None


def is_narrower_than_float32(name: str) -> bool:
    width = width_bits(name)
    return width is not None and width < 32


def torch_dtype(name: str):
    """The torch dtype for a canonical name (imports torch: call only when it is in use)."""
    import torch

    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"torch has no dtype {name!r}")
    return dtype
