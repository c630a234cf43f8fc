"""Checking the dtypes of every floating leaf of a parameter tree.

Trees are torch modules (parameters and buffers), state dicts, nested
dict/list/tuple/dataclass containers, Flax variable dicts (FrozenDict too), Flax NNX
modules and their state, other JAX pytrees and NumPy arrays. Frameworks are recognised
through ``sys.modules``, so this module never imports one that the caller has not
already imported.

A module is never a leaf, whatever ``dtype`` it carries (a Flax module's computation
dtype, a Hugging Face model's ``.dtype``): its parameters are. An NNX module's leaves
are named as in its ``nnx.state`` (``linear/bias``), whichever of the two is checked.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from dtype_lint.runtime.dtypes import dtype_name, is_floating
from dtype_lint.runtime.policy import Policy
from dtype_lint.runtime.violations import DTypeViolationError, Violation

#: How :class:`TreeMismatch` names a leaf dtype that no framework here can read.
UNREADABLE = "unreadable dtype"


@dataclasses.dataclass(frozen=True)
class TreeMismatch:
    """A floating leaf whose dtype is not the expected one."""

    path: str
    expected: str
    actual: str
    code: str = "DTL391"

    def __str__(self) -> str:
        return f"{self.path}: expected {self.expected}, got {self.actual}"


class TreeDTypeError(DTypeViolationError):
    """Raised by :func:`assert_tree_dtypes`; ``.mismatches`` lists every offending leaf."""

    def __init__(self, mismatches: list[TreeMismatch], expected: str) -> None:
        self.mismatches = list(mismatches)
        count = len(mismatches)
        super().__init__(
            [Violation(m.code, m.path, f"expected {m.expected}, got {m.actual}") for m in mismatches],
            f"1 floating leaf is not {expected}:" if count == 1 else f"{count} floating leaves are not {expected}:",
        )


def _expected_name(expected: object) -> str:
    if isinstance(expected, Policy):
        return expected.params
    if isinstance(expected, str):
        # A preset or policy text names a policy; a dtype name is a dtype.
        if "=" in expected or expected.strip().lower().startswith("mixed_"):
            return Policy.parse(expected).params
    name = dtype_name(expected)
    if not is_floating(name):
        raise ValueError(f"expected dtype must be floating, got {expected!r}")
    return name


def _is_torch_module(obj: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def _is_nnx_module(obj: object) -> bool:
    nnx = sys.modules.get("flax.nnx")
    return nnx is not None and isinstance(obj, nnx.Module)


def _leaf_dtype(obj: object) -> str | None:
    """The dtype name of a leaf, ``None`` for what has no dtype, and an ``unreadable
    dtype ...`` text for a dtype this module cannot name: reported, never skipped, since
    "could not read it" must not read as "nothing wrong"."""
    if isinstance(obj, (str, bytes, type)):
        return None
    dtype = getattr(obj, "dtype", None)
    if dtype is None:
        return None
    try:
        return dtype_name(dtype)
    except ValueError:
        return f"{UNREADABLE} {dtype!r}"


def _join(prefix: str, key: object, sep: str) -> str:
    return f"{prefix}{sep}{key}" if prefix else str(key)


def _jax_key(entry: object) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


def _leaves(obj: object, prefix: str, seen: set[int]) -> Iterator[tuple[str, str]]:
    """Yield ``(path, dtype name)`` for every leaf that has a dtype."""
    if id(obj) in seen:
        return
    if _is_torch_module(obj):
        module: Any = obj
        # torch's own dotted names, as in a state dict.
        for name, tensor in module.named_parameters():
            yield _join(prefix, name, "."), dtype_name(tensor.dtype)
        for name, tensor in module.named_buffers():
            yield _join(prefix, name, "."), dtype_name(tensor.dtype)
        return
    if _is_nnx_module(obj):
        # Its state, a mapping down to its variables (each a leaf, its dtype its value's),
        # rather than its pytree, which would name a variable's array `.../bias/value`.
        yield from _leaves(sys.modules["flax.nnx"].state(obj), prefix, seen)
        return
    leaf = _leaf_dtype(obj)
    if leaf is not None:
        yield prefix or "<root>", leaf
        return
    seen.add(id(obj))
    try:
        if isinstance(obj, Mapping):
            for key, value in obj.items():
                yield from _leaves(value, _join(prefix, key, "/"), seen)
        elif isinstance(obj, tuple) and hasattr(obj, "_fields"):
            for field in obj._fields:
                yield from _leaves(getattr(obj, field), _join(prefix, field, "/"), seen)
        elif isinstance(obj, (list, tuple)):
            for index, value in enumerate(obj):
                yield from _leaves(value, _join(prefix, index, "/"), seen)
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for field in dataclasses.fields(obj):
                yield from _leaves(getattr(obj, field.name), _join(prefix, field.name, "/"), seen)
        elif "jax" in sys.modules:
            yield from _jax_leaves(obj, prefix)
    finally:
        seen.discard(id(obj))


def _jax_leaves(obj: object, prefix: str) -> Iterator[tuple[str, str]]:
    # Custom pytree nodes (flax.struct dataclasses are caught above, optax states and
    # registered classes are not): let JAX flatten them.
    import jax

    flat, _ = jax.tree_util.tree_flatten_with_path(obj)
    if len(flat) == 1 and flat[0][1] is obj:
        return
    for keypath, value in flat:
        leaf = _leaf_dtype(value)
        if leaf is not None:
            path = "/".join(_jax_key(entry) for entry in keypath)
            yield _join(prefix, path, "/") if path else (prefix or "<root>"), leaf


def check_tree(tree: object, expected: object) -> list[TreeMismatch]:
    """Every floating leaf of ``tree`` whose dtype is not ``expected``.

    ``expected`` is a dtype, a dtype name, or a :class:`Policy` (its ``params`` dtype).
    Non-floating leaves (integer buffers, step counters) are skipped; a leaf whose dtype
    cannot be read is a mismatch whose ``actual`` starts with ``"unreadable dtype"``.
    """
    want = _expected_name(expected)
    return [
        TreeMismatch(path, want, actual)
        for path, actual in _leaves(tree, "", set())
        if (is_floating(actual) or actual.startswith(UNREADABLE)) and actual != want
    ]


def assert_tree_dtypes(tree: object, expected: object) -> None:
    """Raise :class:`TreeDTypeError` (an ``AssertionError``) listing every mismatch."""
    mismatches = check_tree(tree, expected)
    if mismatches:
        raise TreeDTypeError(mismatches, _expected_name(expected))
