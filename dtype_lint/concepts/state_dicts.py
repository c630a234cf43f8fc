"""State dicts recast entry by entry (``POLICY.md`` F3): a dict comprehension over the
``.items()`` of a model's parameters or state (``state_dict()``, a loaded checkpoint, a
name that says so: :mod:`dtype_lint.concepts.parameter_trees`) that casts every value to
another dtype, buffers included. A cast to float32 restores full precision (master
weights, export)."""

from __future__ import annotations

import ast
import re

from dtype_lint.concepts.casts import cast_dtype_name, cast_target
from dtype_lint.concepts.parameter_trees import parameter_dict
from dtype_lint.core.deferred import cst
from dtype_lint.core.options import Options
from dtype_lint.core.rule import Finder, Site
from dtype_lint.core.shapes import Index, Prefilter, cast_call, in_word

_ITEMS = re.compile(r"items\b")  # after a word's start (see shapes.in_word)


# The finder's shape, checked on CPython's ast by the prefilter.
def _entry_method(index: Index) -> bool:
    """DTL302: a dict comprehension over ``.items()`` whose value calls a method of the
    entry's value (visit_DictComp's shape; whether it casts is the rule's to say)."""
    for comp in index(ast.DictComp):
        first = comp.generators[0]
        target, value = first.target, comp.value
        entry = target.elts[1] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else None
        entry = entry.value if isinstance(entry, ast.Starred) else entry
        if (isinstance(first.iter, ast.Call) and isinstance(first.iter.func, ast.Attribute)
                and first.iter.func.attr == "items" and isinstance(entry, ast.Name)
                and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and isinstance(value.func.value, ast.Name) and value.func.value.id == entry.id):
            return True
    return False


class StateDictCasts(Finder):
    """A dict comprehension that casts every entry of a parameter or state dict."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: "items" in t and cast_call(t) and any(
                             not in_word(t, m.start() - 1) for m in _ITEMS.finditer(t)) and (
                             u is None or _entry_method(u.index)),
                         import_words=("items", *("float", "half", "double", "bfloat16", "dtype")))

    def visit_DictComp(self, node: cst.DictComp) -> None:
        comp = node.for_in
        if not (isinstance(comp.iter, cst.Call) and isinstance(comp.iter.func, cst.Attribute)):
            return
        if comp.iter.func.attr.value != "items" or not isinstance(comp.target, cst.Tuple):
            return
        elements = comp.target.elements
        if len(elements) != 2 or not isinstance(elements[1].value, cst.Name):
            return
        value_name = elements[1].value.value
        value = node.value
        if isinstance(value, cst.Call):
            receiver = cast_target(value, self.ctx)
            # A cast to float32 restores full precision (master weights, export).
            if not (isinstance(receiver, cst.Name) and receiver.value == value_name and (
                cast_dtype_name(value, self.ctx) != "float32"
            )):
                return
            if parameter_dict(comp.iter.func.value, self.ctx):
                self.found(Site(node))
