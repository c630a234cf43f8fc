"""How the frameworks spell a cast, and a cast back: method names that cast a tensor or a
module, and the test of a cast to a dtype that follows something, shared by the LibCST
rules, the prefilter's syntax checks, the project model's summaries and the mypy plugin
(standard library only)."""

from __future__ import annotations

import ast

# `.half()`, `.bfloat16()`, `.double()`, `.float()`: a cast by name, without arguments.
CAST_METHODS = frozenset({"half", "bfloat16", "double", "float"})
# `.to(dtype)`, `.type(dtype)`, `.astype(dtype)`: a cast to the dtype they are given.
TYPE_CAST_METHODS = frozenset({"to", "type", "astype"})
# The casts that take a dtype or another value to follow (`type_as`).
CAST_METHOD_NAMES = frozenset({"to", "astype", "type", "type_as"})
# Array constructors: a dtype given to them is the new array's.
CREATORS = frozenset({"array", "asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "tensor",
                      "as_tensor", "normal", "uniform", "randn", "rand", "zeros_like", "ones_like", "full_like",
                      "empty_like", "convert_element_type"})


def _last_name(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def casts_to_follower(call: ast.Call) -> bool:
    """A cast whose dtype follows something (``x.dtype``, ``self.dtype``, ``type_as``) or
    is a low precision: not float32."""
    if _last_name(call.func) == "type_as":
        return True
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "dtype")]
    for arg in args:
        text = ast.dump(arg)
        if "float32" in text or "'float'" in text or "single" in text:
            continue
        if "dtype" in text.lower() or "float16" in text or "half" in text:
            return True
    return False


def casts_back_call(call: ast.Call) -> bool:
    """``x.to(x.dtype)``, ``x.astype(dtype)``, ``jnp.asarray(y, dtype)``: a cast or a
    conversion to a dtype that follows something."""
    name = _last_name(call.func)
    if name in CAST_METHOD_NAMES:
        return casts_to_follower(call)
    if name in CREATORS and (len(call.args) > 1 or call.keywords):
        return casts_to_follower(ast.Call(call.func, call.args[1:], call.keywords))
    return False
