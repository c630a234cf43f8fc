"""An annotation made to admit None, for fixes that put `None` where it did not: a fix
must leave code that type-checks (`dtype: torch.dtype = None` is mypy's `[assignment]`
error).

Written in the file's own style: `Optional[X]` (or `typing.Optional[X]`) where the file
already writes that, `X | None` where the target Python has it (3.10 on), and
`Optional[X]` with its import otherwise.
"""

from __future__ import annotations

import re

from dtype_lint.core.deferred import cst

_BARE_OPTIONAL = re.compile(r"(?<![\w.])Optional\[")
_TYPING_OPTIONAL = re.compile(r"(?<![\w.])typing\.Optional\[")
# Annotations that admit None already.
_ADMITS_ANYTHING = frozenset({"Any", "object"})

Replacement = tuple[tuple["cst.CSTNode", "cst.CSTNode"], ...]


def optional(annotation: cst.BaseExpression, source: str,
             target: tuple[int, int]) -> tuple[Replacement, tuple[tuple[str, str | None], ...]]:
    """The replacement of ``annotation`` (none where it admits None already, or is a
    string) and the imports it needs, for a file whose text is ``source``."""
    if _admits_none(annotation) or isinstance(annotation, (cst.SimpleString, cst.ConcatenatedString)):
        return (), ()
    if _TYPING_OPTIONAL.search(source) and not _BARE_OPTIONAL.search(source):
        return ((annotation, _subscript(cst.Attribute(cst.Name("typing"), cst.Name("Optional")), annotation)),), (
            ("typing", None),)
    if target >= (3, 10) and not _BARE_OPTIONAL.search(source):
        union = cst.BinaryOperation(annotation, cst.BitOr(), cst.Name("None"))
        return ((annotation, union),), ()
    return ((annotation, _subscript(cst.Name("Optional"), annotation)),), (("typing", "Optional"),)


def _subscript(value: cst.BaseExpression, annotation: cst.BaseExpression) -> cst.Subscript:
    return cst.Subscript(value, [cst.SubscriptElement(cst.Index(annotation))])


def _admits_none(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value in ("None", *_ADMITS_ANYTHING)
    if isinstance(node, cst.Attribute):
        return node.attr.value in _ADMITS_ANYTHING
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return _admits_none(node.left) or _admits_none(node.right)
    if isinstance(node, cst.Subscript):
        name = node.value.attr.value if isinstance(node.value, cst.Attribute) else getattr(node.value, "value", "")
        if name == "Optional":
            return True
        if name in ("Union", "Annotated"):
            elements = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
            return any(_admits_none(e) for e in (elements if name == "Union" else elements[:1]))
    return False
