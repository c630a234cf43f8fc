"""Method names that cast a tensor or a module, shared by the LibCST rules, the
prefilter's syntax checks and the mypy plugin (no LibCST here)."""

# `.half()`, `.bfloat16()`, `.double()`, `.float()`: a cast by name, without arguments.
CAST_METHODS = frozenset({"half", "bfloat16", "double", "float"})
# `.to(dtype)`, `.type(dtype)`, `.astype(dtype)`: a cast to the dtype they are given.
TYPE_CAST_METHODS = frozenset({"to", "type", "astype"})
