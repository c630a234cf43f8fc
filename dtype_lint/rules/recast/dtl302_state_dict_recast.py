"""DTL302: a dict comprehension that casts every tensor of a state dict or parameter dict."""

from __future__ import annotations

import ast
import re

from dtype_lint.core.deferred import cst
from dtype_lint.core.shapes import Index, Prefilter, cast_call, in_word
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options
from dtype_lint.core.roles import roles
from dtype_lint.rules.patterns import cast_dtype_name, cast_target

_ITEMS = re.compile(r"items\b")  # after a word's start (see shapes.in_word)


# The rule's shape, checked on CPython's ast by the prefilter (see its Prefilter).
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

class StateDictRecast(Rule):
    doc = RuleDoc(
        code="DTL302",
        name="state-dict-recast",
        summary="State dict recast tensor by tensor",
        what_it_does="""
            Checks dict comprehensions over `.items()` whose value casts every tensor:
            `{k: v.half() for k, v in model.state_dict().items()}`,
            `{k: v.to(torch.bfloat16) for k, v in params.items()}`, when the dict holds a
            model's parameters or state (`dtype_lint.core.roles`): a `state_dict()`, a
            checkpoint loaded from a file, or a name that says so (`params`, `weights`,
            `state_dict`, `sd`, `checkpoint`, `model`); not a cache of activations or
            features. Test code, casting helpers and inference or export paths are not
            reported.
            """,
        why_bad="""
            Casting every entry of a state dict recasts buffers and integer-like state
            too (BatchNorm's running statistics, position ids stored as floats), and
            loading it back with `load_state_dict` silently casts the values to the
            module's dtype again, so the low precision is lost or, worse, applied to a
            model that then trains in it. Set the module's dtype through its interface
            (`model.to(dtype)` once, a policy, or `torch.autocast`).
            """,
        example="""
            sd = {k: v.half() for k, v in model.state_dict().items()}
            """,
        use_instead="""
            with torch.autocast("cuda", dtype=torch.float16):
                out = model(batch)
            """,
        known_limits="""
            Loops that assign entry by entry (`for k in sd: sd[k] = sd[k].half()`) are
            not seen. Casts to float32 (`v.float()`) restore full precision and are not
            reported. Casts inside explicit casting or conversion helpers (names with
            `cast`, `convert`, `to_fp16`, ...) are not reported. A dict of parameters whose
            name does not say so (`{k: v.half() for k, v in d.items()}`) is not seen.
            """,
    )
    message = (
        "casting every entry of a state dict recasts buffers too and bypasses the module's "
        "dtype; configure the module's dtype or use autocast/a policy"
    )
    triggers = (".items()",)
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: "items" in t and cast_call(t) and any(
                             not in_word(t, m.start() - 1) for m in _ITEMS.finditer(t)) and (
                             u is None or _entry_method(u.index)),
                         import_words=("items", *("float", "half", "double", "bfloat16", "dtype")))

    valid = (
        "import torch\ncache = {k: f.to(torch.float16) for k, f in new_factors.items()}",
        "sd = {k: v.to('cuda') for k, v in model.state_dict().items()}",
        "sd = {k: v.clone() for k, v in model.state_dict().items()}",
        "def convert_checkpoint(sd):\n    return {k: v.half() for k, v in sd.items()}",
        "sd = {k: v.float() for k, v in model.state_dict().items()}",
    )
    invalid = (
        Invalid("sd = {k: v.half() for k, v in model.state_dict().items()}"),
        Invalid("import torch\nsd = {k: v.to(torch.bfloat16) for k, v in params.items()}"),
    )

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
            found = roles(self.ctx, self.options)
            if found.parameter_dict(comp.iter.func.value) and not found.skipped() and found.path(node) is None:
                self.report(node)
