"""Quantised code: a function that works with low-bit storage (``uint8``/``int8``/``int4``/
``float8_*``/``float4_*`` dtypes, or calls that quantise or dequantise), a method of a class
that stores low-bit parameters or buffers, or one whose name or whose class's name says it
quantises. Its float32 is the format's (scales, biases and lookup tables the low-bit
kernels take in float32, values dequantised for them), not a compute dtype a policy could
set (``POLICY.md`` F1: quantisation for serving)."""

from __future__ import annotations

import ast

from dtype_lint.concepts.definitions import Definitions, Key, _stored_values
from dtype_lint.core.shapes import last_name, walk

# Low-bit storage dtypes and the calls that quantise: code using them is quantised code.
_QUANTISED_DTYPES = frozenset({"uint8", "int8", "int4", "uint4", "qint8", "quint8", "quint4x2"})
_QUANTISED_PREFIXES = ("float8", "float4")
_QUANTISE_WORDS = ("quantiz", "quantis")


class Quantised(Definitions):
    """Which functions of the file are quantised code."""

    def quantised(self, key: Key) -> bool:
        """Whether the function ``key`` is quantised code: its name, or its class's, says
        it quantises; its body uses a low-bit dtype or calls something that quantises; or
        its class stores low-bit parameters or buffers (packed weights)."""
        memo = self._quantised.get(key)
        if memo is None:
            function = self.functions.get(key)
            owner = self.classes.get(key[0]) if key[0] else None
            memo = any(_quantise_word(n) for n in (*key[1], owner.name if owner else "")) or (
                function is not None and any(_quantised_node(n) for n in self._nodes(function))) or (
                owner is not None and any(_quantised_node(n, calls=False) for method in owner.methods.values()
                                          for value in _stored_values(method.node, self._stores(method))
                                          for n in walk(value)))
            self._quantised[key] = memo
        return memo


def _quantise_word(name: str) -> bool:
    lower = name.lower()
    return any(word in lower for word in _QUANTISE_WORDS)


def _quantised_node(node: ast.AST, calls: bool = True) -> bool:
    """A low-bit dtype (``torch.uint8``, ``jnp.int8``, ``"float8_e4m3fn"``) or, with
    ``calls``, a call that quantises or dequantises."""
    if isinstance(node, ast.Attribute):
        word = node.attr
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 24:
        word = node.value
    elif isinstance(node, ast.Call) and calls:
        callee = last_name(node.func)
        return callee is not None and _quantise_word(callee)
    else:
        return False
    return word in _QUANTISED_DTYPES or word.startswith(_QUANTISED_PREFIXES)
