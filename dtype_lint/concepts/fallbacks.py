"""Precision fallbacks (``POLICY.md`` F1.2): a dtype lookup or precision switch that maps
an unrecognised setting to float32 (``{"bf16": ...}.get(precision, torch.float32)``,
``config.dtype or jnp.float32``, ``bf16 if precision == "bf16" else float32``): the user
asked for another precision and trains in float32. Not a lookup: a check of an input's
dtype (an island), a boolean switch, a storage or communication dtype, an optimizer's
state dtype."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Sequence

from dtype_lint.concepts.entry_points import data_side
from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import LOW_PRECISION, dtype_name, is_float32
from dtype_lint.core.rule import Check, Finder, Hit, Site
from dtype_lint.core.shapes import Index, Prefilter, f32, lines_of, text_of
from dtype_lint.core.words import matches_any

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.options import Options


# A switch's else branch takes every value its tests do not name: the float32 setting the
# code may have validated elsewhere, or a setting it does not know. On the labelled
# corpora every such finding was the float32 setting itself (0 of 4 real): a pattern.
_ELSE = "the else branch of a precision switch, which may be the float32 setting itself"


class PrecisionFallbacks(Finder):
    """A dtype lookup or precision switch whose fallback is float32."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: f32(t) and (u is None or _fallback(u.index, u.lines)),
                         import_words=("float", "half", "double", "single", "bfloat16", "dtype"))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "get" and len(node.args) == 2:
            key, default = node.args[0].value, node.args[1].value
        elif self.ctx.resolve(func) == "getattr" and len(node.args) == 3:
            key, default = node.args[1].value, node.args[2].value
        else:
            return
        if is_float32(default, self.ctx) and not self._storage_key(key):
            self.found(Site(default))

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if isinstance(node.operator, cst.Or) and is_float32(node.right, self.ctx):
            # An unset storage or communication dtype (`reduce_dtype or float32`) is not
            # a precision lookup.
            left = self.ctx.module.code_for_node(node.left)
            if not any(name in left for name in self.options.param_dtype_names):
                # `x or float32`: float32 where nothing is set, the documented default that
                # POLICY.md counts as benign, unless `x` may be a setting it does not know.
                self.found(Site(node.right, confidence="low",
                                basis="float32 where no dtype is set (None -> float32), which may be the documented default"))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if self._not_a_lookup(node.test):
            return  # an input's dtype check (an island) or a boolean switch: not a lookup
        if is_float32(node.orelse, self.ctx) and dtype_name(node.body, self.ctx) in LOW_PRECISION:
            self.found(Site(node.orelse, confidence="low", basis=_ELSE))

    def visit_If(self, node: cst.If) -> None:
        if self._not_a_lookup(node.test) or not isinstance(node.orelse, cst.Else):
            return
        fallback = _assigned_dtype(node.orelse.body)
        if fallback is None or not is_float32(fallback, self.ctx) or _optimizer_state(node.orelse.body):
            return
        branch: cst.If | cst.Else | None = node
        while isinstance(branch, cst.If):
            value = _assigned_dtype(branch.body)
            if value is not None and dtype_name(value, self.ctx) in LOW_PRECISION:
                self.found(Site(fallback, confidence="low", basis=_ELSE))
                return
            branch = branch.orelse

    def _not_a_lookup(self, test: cst.BaseExpression) -> bool:
        """A check of an input's dtype (an island), a boolean switch, or a choice of a
        storage dtype: none of them is a precision lookup."""
        text = self.ctx.module.code_for_node(test)
        return (
            ".dtype" in text
            or not _compares_value(test)
            or _compares_dtype(test, self.ctx)
            or any(name in text for name in self.options.param_dtype_names)
        )

    def _storage_key(self, key: cst.BaseExpression) -> bool:
        """A literal key naming a storage dtype: reading an option, not a lookup."""
        if not isinstance(key, cst.SimpleString):
            return False
        value = key.evaluated_value
        return isinstance(value, str) and value in self.options.param_dtype_names


def _data_side_or_entry(ctx: FileContext, options: Options, hit: Hit) -> bool:
    """In a data-side class or module (loaders, pre-processing), float32 is the data's
    dtype (a function's name alone does not say so: `loader_dtype` picks a dtype); an
    entry point's fallback is the user's default, as its parameters' defaults are."""
    cls = ctx.current_class
    function = ctx.function
    return any(data_side(name, options) for name in (cls.name if cls else "", ctx.module_stem)) or (
        function is not None and matches_any(function.name, options.entry_point_functions))


DATA_SIDE_OR_ENTRY = Check("data-side code, or a user entry point's default", _data_side_or_entry)

def _compares_dtype(test: cst.BaseExpression, ctx: FileContext) -> bool:
    """Whether a comparison in the test has a dtype object on one side (`d == torch.bfloat16`)."""
    if isinstance(test, cst.Comparison):
        sides = [test.left, *(target.comparator for target in test.comparisons)]
        return any(isinstance(s, (cst.Name, cst.Attribute)) and dtype_name(s, ctx) for s in sides)
    if isinstance(test, cst.BooleanOperation):
        return _compares_dtype(test.left, ctx) or _compares_dtype(test.right, ctx)
    return False


def _compares_value(test: cst.BaseExpression) -> bool:
    """Whether a test compares a setting against values (==, !=, in, not in)."""
    if isinstance(test, cst.Comparison):
        return any(
            isinstance(target.operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)) for target in test.comparisons
        )
    if isinstance(test, cst.BooleanOperation):
        return _compares_value(test.left) or _compares_value(test.right)
    if isinstance(test, cst.UnaryOperation):
        return _compares_value(test.expression)
    return False


def _optimizer_state(block: cst.BaseSuite) -> bool:
    """Whether a block's lone assignment sets an attribute of an optimizer
    (``optimizer.accum_type = torch.float32``): the dtype of its state, which is storage."""
    first = block.body[0] if isinstance(block, cst.IndentedBlock) and block.body else None
    if not (isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Assign)):
        return False
    for target in first.body[0].targets:
        receiver = target.target.value if isinstance(target.target, cst.Attribute) else None
        while isinstance(receiver, cst.Attribute):
            receiver = receiver.attr if "optim" in receiver.attr.value.lower() else receiver.value
        if isinstance(receiver, cst.Name) and "optim" in receiver.value.lower():
            return True
    return False


def _assigned_dtype(block: cst.BaseSuite) -> cst.BaseExpression | None:
    """The value of a lone `name = value` statement heading a block, if any."""
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return None
    first = block.body[0]
    if isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Assign):
        return first.body[0].value
    return None


# The finder's shape, checked on CPython's ast by the prefilter.
def _fallback(index: Index, lines: Sequence[str]) -> bool:
    """DTL102: ``d.get(k, f32)``, ``getattr(o, n, f32)``, ``x or f32``, ``low if c else f32``
    or an ``if``/``else`` that assigns a low precision, else float32, where the test
    compares a value (``==``, ``!=``, ``in``, ``not in``)."""
    for node in index(ast.Call, ast.BoolOp, ast.IfExp, ast.If):
        candidates: Sequence[ast.AST] = ()
        if isinstance(node, ast.Call):
            values = [*node.args, *(k.value for k in node.keywords)]
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "get" and len(values) == 2:
                candidates = values  # LibCST counts keywords as arguments, in source order
            elif isinstance(func, ast.Name) and func.id == "getattr" and len(values) == 3:
                candidates = values[1:]  # an alias of getattr resolves to another name
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            candidates = node.values[1:]  # LibCST nests `a or b or c`: each right operand
        elif isinstance(node, ast.IfExp):
            if _lookup_test(node.test, lines) and _LOW.search(lines_of(node.body, lines)):
                candidates = (node.orelse,)
        elif isinstance(node, ast.If) and node.orelse and _lookup_test(node.test, lines):
            body, orelse = node.body[0], node.orelse[0]
            if (isinstance(orelse, ast.Assign) and isinstance(body, ast.Assign)
                    and _LOW.search(lines_of(body.value, lines))):
                candidates = (orelse.value,)
        if any(_may_spell_dtype(c) and f32(text_of(c, lines)) for c in candidates):
            return True
    return False


def _may_spell_dtype(node: ast.AST) -> bool:
    """Whether dtypes.dtype_name can name a dtype for this node: a string, a name, an
    attribute, or a ``*.dtype(...)`` call (an alias of one is the prefilter's)."""
    if isinstance(node, ast.Call):
        func = node.func
        return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) == "dtype"
    return isinstance(node, (ast.Name, ast.Attribute)) or (isinstance(node, ast.Constant) and isinstance(
        node.value, str))


# What may spell float16 or bfloat16 (dtypes.LOW_PRECISION); aliases are the prefilter's.
_LOW = re.compile(r"float16|half")


def _lookup_test(test: ast.AST, lines: Sequence[str]) -> bool:
    """Whether the DTL102 rule may take the test for a precision lookup: it compares a
    value, and is not (as far as one line shows) a check of an input's ``.dtype``."""
    one_line = test.lineno == test.end_lineno  # type: ignore[attr-defined]
    return _compares_a_value(test) and not (one_line and ".dtype" in text_of(test, lines))


def _compares_a_value(test: ast.AST) -> bool:
    """As the DTL102 rule's test: a comparison by ==, !=, in or not in, at any depth of
    ``and``/``or``/``not``."""
    if isinstance(test, ast.Compare):
        return any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in test.ops)
    if isinstance(test, ast.BoolOp):
        return any(_compares_a_value(value) for value in test.values)
    if isinstance(test, ast.UnaryOp):
        return _compares_a_value(test.operand)
    return False
