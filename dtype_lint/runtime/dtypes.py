"""Framework-neutral dtype names: normalising torch/NumPy/JAX dtypes and short aliases.

Everything in :mod:`dtype_lint.runtime` compares dtypes by canonical name
(``"float32"``, ``"bfloat16"``) so that a policy or an expected dtype can be written
once and checked against torch tensors, JAX arrays and NumPy arrays alike, without
importing either framework.
"""

from __future__ import annotations

_ALIASES = {
    "f64": "float64", "fp64": "float64", "double": "float64",
    "f32": "float32", "fp32": "float32", "float": "float32", "single": "float32",
    "f16": "float16", "fp16": "float16", "half": "float16",
    "bf16": "bfloat16",
}

#: Explicit mantissa bits (without the implicit leading one) of the floating dtypes.
MANTISSA_BITS = {
    "float64": 52,
    "float32": 23,
    "float16": 10,
    "bfloat16": 7,
    "float8_e4m3fn": 3,
    "float8_e4m3fnuz": 3,
    "float8_e4m3b11fnuz": 3,
    "float8_e5m2": 2,
    "float8_e5m2fnuz": 2,
}

#: Storage width in bits, the order used to decide what is "lower precision".
WIDTH_BITS = {name: 8 for name in MANTISSA_BITS if name.startswith("float8")}
WIDTH_BITS.update({"float64": 64, "float32": 32, "float16": 16, "bfloat16": 16})


def dtype_name(obj: object) -> str:
    """Canonical name of a dtype, a dtype name/alias, or anything with a ``.dtype``.

    Accepts ``torch.bfloat16``, ``np.float32``, ``jnp.bfloat16``, ``np.dtype("f4")``,
    ``"bf16"``, a tensor or an array. Raises ``ValueError`` for what is none of these.
    """
    if isinstance(obj, str):
        key = obj.strip().lower()
        key = _ALIASES.get(key, key)
        if key.startswith("torch."):
            key = key[len("torch."):]
        return key
    module = type(obj).__module__
    if module == "torch" and type(obj).__name__ == "dtype":
        return str(obj)[len("torch."):]
    dtype = getattr(obj, "dtype", None)
    if dtype is not None and dtype is not obj and not isinstance(obj, type):
        return dtype_name(dtype)
    name = getattr(obj, "name", None)
    if isinstance(name, str) and module.startswith("numpy"):
        return name
    if isinstance(obj, type):
        # Scalar types such as np.float32 or ml_dtypes' bfloat16; numpy is only
        # imported here, where the caller already handed us a NumPy-like type.
        import numpy as np

        try:
            return np.dtype(obj).name
        except TypeError:
            pass
    raise ValueError(f"not a dtype: {obj!r}")


def is_floating(name: str) -> bool:
    """Whether a canonical dtype name is a real floating type (complex is not)."""
    return name in MANTISSA_BITS or name.startswith(("float", "bfloat"))


def is_narrower_than_float32(name: str) -> bool:
    return WIDTH_BITS.get(name, 32) < 32


def torch_dtype(name: str):
    """The torch dtype for a canonical name (imports torch: call only when it is in use)."""
    import torch

    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"torch has no dtype {name!r}")
    return dtype
