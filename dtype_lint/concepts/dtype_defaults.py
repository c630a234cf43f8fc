"""Computation-dtype defaults (``POLICY.md`` F1.1): a parameter or class field that holds
a computation dtype (``dtype``, ``compute_dtype``...; never ``param_dtype`` and the other
storage names) and defaults to float32 in any spelling, and what makes one benign: a user
entry point or data-side code, a storage or island role in the file, a host-side NumPy
dtype, base classes in other files that always pass it."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Sequence

from dtype_lint.concepts.activations import host_side_dtype
from dtype_lint.concepts.definitions import passes_argument
from dtype_lint.concepts.deliberate import TABLE_WORDS
from dtype_lint.concepts.entry_points import data_side, data_side_class, entry_point, loads_pretrained
from dtype_lint.concepts.layer_facts import key_of, layer_facts
from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import dtype_name, is_float32
from dtype_lint.core.optional_annotation import optional
from dtype_lint.core.rule import Check, Finder, Hit, Site
from dtype_lint.core.shapes import Index, Prefilter, f32, lines_of
from dtype_lint.core.traversal import descendants

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.options import Options


def compute_names(options: Options) -> frozenset[str]:
    return frozenset(options.compute_dtype_names) - frozenset(options.param_dtype_names)


class ComputeDtypeDefaults(Finder):
    """A parameter or class field holding a computation dtype that defaults to float32."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        names = compute_names(options)
        return Prefilter(
            lambda t, lc, u: f32(t) and any(name in t for name in names) and (
                u is None or _compute_default(u.index, u.lines, names)),
            import_words=("float", "half", "double", "single", "bfloat16", "dtype"),
            # Only parameters and fields can hold a finding: a function's body matters
            # only where it binds one of those names itself or asserts what it may hold.
            header_only=lambda body, lines: not (_compute_default(body, lines, names) or any(
                isinstance(n.test, ast.Compare) and isinstance(n.test.left, ast.Name) and n.test.left.id in names
                for n in body(ast.Assert))),
        )

    def visit_Param(self, node: cst.Param) -> None:
        name = node.name.value
        if node.default is not None and name in compute_names(self.options) and is_float32(node.default, self.ctx):
            self._found("param", name, node.default, node.annotation)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and isinstance(node.target, cst.Name):
            self._field(node.target.value, node.value, node.annotation)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self._field(node.targets[0].target.value, node.value)

    def _field(self, name: str, value: cst.BaseExpression, annotation: cst.Annotation | None = None) -> None:
        # Only fields written in a class body, not assignments in its methods.
        if (self.ctx.current_class is not None and not self.ctx.in_function
                and name in compute_names(self.options) and is_float32(value, self.ctx)):
            self._found("field", name, value, annotation)

    def _found(self, kind: str, name: str, default: cst.BaseExpression, annotation: cst.Annotation | None) -> None:
        # The fix puts `None`, which must type-check: the annotation is made to admit it.
        also, imports = optional(annotation.annotation, self.ctx.text, self.options.target_version) if (
            annotation is not None) else ((), ())
        confidence, basis = self._evidence()
        self.found(Site(default, {"name": name}, replace=((default, cst.Name("None")), *also), imports=imports,
                        context=(kind, name), confidence=confidence, basis=basis))

    def _evidence(self) -> tuple[str, str]:
        """High where the dtype belongs to a layer (by its structure) or to a function on
        a layer's forward path: its values meet the activations there. Elsewhere (a public
        helper, a plain class) that they do is assumed: medium."""
        facts = layer_facts(self.ctx, self.options)
        cls = self.ctx.current_class
        if (cls is not None and facts.is_layer(cls.name)) or (
                self.ctx.function is not None and facts.on_forward_path(key_of(self.ctx))):
            return "high", ""
        return "medium", "a helper or plain class: that its values meet the activations is assumed"


def _user_choice(ctx: FileContext, options: Options, hit: Hit) -> bool:
    kind, _ = hit.site.context
    if kind == "param":
        function = ctx.function
        return function is not None and entry_point(ctx, options, function)
    cls = ctx.current_class
    return data_side_class(ctx, options, cls.name) or data_side(ctx.module_stem, options)  # type: ignore[union-attr]


def _benign_role(ctx: FileContext, options: Options, hit: Hit) -> bool:
    kind, name = hit.site.context
    facts = layer_facts(ctx, options)
    if kind == "field":
        cls = ctx.current_class.name  # type: ignore[union-attr]
        return facts.benign_field(cls, name) or facts.overridden_field(cls, name)
    return ctx.function is not None and facts.benign_param(key_of(ctx), name)


def _host_side(ctx: FileContext, options: Options, hit: Hit) -> bool:
    return hit.site.context[0] == "param" and host_side_dtype(hit.site.node, ctx, options)


def _bases_pass(ctx: FileContext, options: Options, hit: Hit) -> bool:
    """A method that overrides one its base classes (in other files) call, where every
    such call passes the dtype: those calls are its callers, and its default is never
    used."""
    kind, name = hit.site.context
    function, cls = ctx.function, ctx.method_class()
    if kind != "param" or function is None or cls is None or ctx.view is None or function.name.startswith("__"):
        return False
    found = ctx.view.local(ctx.text, cls.name, ctx.file_tree())
    if found is None:
        return False
    params = [p.name.value for p in function.node.params.params]  # type: ignore[attr-defined]
    position = params.index(name) - (1 if params and params[0] == "self" else 0) if name in params else -1
    calls = ctx.view.calls_in_bases(found, function.name)
    return bool(calls) and all(passes_argument(call, name, position) for call in calls)


def _full_precision_only(ctx: FileContext, options: Options, hit: Hit) -> bool:
    """The function asserts the dtype is float32 or float64 (``assert dtype in
    [torch.float64, torch.float32]``): a precision knob for a table, which half
    precision may not take, not a computation dtype."""
    kind, name = hit.site.context
    function = ctx.function
    if kind != "param" or function is None:
        return False
    for node in descendants(function.node):
        if isinstance(node, cst.Assert) and isinstance(node.test, cst.Comparison) and isinstance(
                node.test.left, cst.Name) and node.test.left.value == name:
            sides = [c.comparator for c in node.test.comparisons]
            values = [e.value for side in sides for e in (side.elements if isinstance(side, (cst.List, cst.Tuple, cst.Set))
                                                          else ())] or sides
            if values and all(dtype_name(v, ctx) in ("float32", "float64") for v in values):
                return True
    return False


def _one_hot(ctx: FileContext, options: Options, hit: Hit) -> bool:
    function = ctx.function
    return function is not None and any(word in function.name.lower() for word in ("one_hot", "onehot"))


USER_CHOICE = Check("a user entry point or data-side code (the default is the user's or the data's choice)",
                    _user_choice)
BENIGN_ROLE = Check("a storage, mask, int-to-float, island or inner-link role of the dtype in the file "
                    "(concepts.storage, concepts.islands)", _benign_role)
HOST_SIDE = Check("a NumPy dtype where no framework takes one as a compute dtype (host-side arrays)", _host_side)
BASES_PASS = Check("an override whose base classes, in other files, always pass the dtype", _bases_pass)
PRETRAINED_MODEL = Check("a top-level model that loads its own weights (a pretrained or checkpoint argument): "
                         "its dtype is the user's knob, by convention",
                         lambda ctx, options, hit: loads_pretrained(ctx, options), demotes="low")
FULL_PRECISION_ONLY = Check("a dtype the function asserts is float32 or float64: a table's precision knob",
                            _full_precision_only)
ONE_HOT = Check("a one-hot helper (its name says so): its dtype is the encoding's", _one_hot, demotes="low")


def _table_builder(ctx: FileContext, options: Options, hit: Hit) -> bool:
    names = [s.name for s in ctx.scopes if isinstance(s.node, (cst.FunctionDef, cst.ClassDef))]
    return any(word in name.lower() for name in names for word in TABLE_WORDS)


TABLE_BUILDER = Check("a rotary or frequency table's builder (its name says so): such tables are kept in float32 "
                      "on purpose and cast back where they are applied", _table_builder, demotes="low")


# The finder's shape, checked on CPython's ast by the prefilter.
def _compute_default(index: Index, lines: Sequence[str], names: frozenset[str]) -> bool:
    """A parameter, field or binding named in ``names`` whose value spells float32."""
    for node in index(ast.arguments):
        positional = [*node.posonlyargs, *node.args]
        pairs = list(zip(positional[len(positional) - len(node.defaults):], node.defaults))
        pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None]
        if any(arg.arg in names and f32(lines_of(default, lines)) for arg, default in pairs):
            return True
    for node in index(ast.Assign, ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if (node.value is not None and any(isinstance(t, ast.Name) and t.id in names for t in targets)
                and f32(lines_of(node.value, lines))):
            return True
    return False
