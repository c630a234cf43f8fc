"""What the prefilter may take for a module, on CPython's ``ast`` of a unit: an
over-approximation of :mod:`dtype_lint.concepts.modules` (a shape must keep every unit
the rules could report in), through the imports, classes and bindings a unit sees."""

from __future__ import annotations

import ast
import fnmatch

from dtype_lint.core.shapes import Names, qualified_names


def may_be_module(expr: ast.AST, names: Names, depth: int) -> bool:
    """Whether concepts.modules.module_kind may find ``expr`` to be a module."""
    if depth > 6:
        return True  # a chain of bindings too long to follow: keep the unit
    if isinstance(expr, ast.Call):
        return module_type(expr.func, names)
    if isinstance(expr, ast.Name):
        if expr.id == "self" or named_module(expr.id, names):
            return True
        return any(
            (isinstance(value, (ast.Name, ast.Attribute)) and module_type(value, names))
            or may_be_module(value, names, depth + 1)
            for value in names.bindings.get(expr.id, ())
        )
    return (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"
            and named_module(expr.attr, names))


def named_module(name: str, names: Names) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in names.module_names)


def module_type(expr: ast.AST, names: Names) -> bool:
    """Whether a dotted name may resolve to a torch module class (concepts.modules.module_type)."""
    for qualified in qualified_names(expr, names):
        last = qualified.rsplit(".", 1)[-1]
        if qualified.startswith("torch.nn.") and last[:1].isupper() and not last.startswith("Parameter"):
            return True
        if (qualified in names.classes or qualified in names.module_bases or qualified.endswith("LightningModule")
                or qualified == "nn.Module" or "torch_module" in names.project_kinds(qualified)):
            return True
    return False


def pickled_type(expr: ast.AST, names: Names) -> bool:
    """Whether a dotted name may resolve to a class whose instances are pickled whole (a
    torch module, a dataset): what FileContext.kinds_of may find it to be."""
    return module_type(expr, names) or any(
        q.endswith("Dataset") or "dataset" in names.project_kinds(q) for q in qualified_names(expr, names))
