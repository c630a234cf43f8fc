"""DTL102: a dtype lookup or precision switch that falls back to float32."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Sequence

from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import LOW_PRECISION, dtype_name, is_float32
from dtype_lint.core.layers import key_of
from dtype_lint.core.shapes import Index, Prefilter, f32, lines_of, text_of
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options
from dtype_lint.rules.patterns import matches_any

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext


class Float32Fallback(Rule):
    doc = RuleDoc(
        code="DTL102",
        name="float32-fallback",
        summary="Dtype lookup falls back to float32",
        what_it_does="""
            Checks for a dtype chosen from a precision setting that falls back to float32
            when the setting is not recognised: `mapping.get(precision, torch.float32)`,
            `dtype or jnp.float32`, `getattr(config, "dtype", torch.float32)`, and
            `torch.bfloat16 if precision == "bf16" else torch.float32`.
            """,
        why_bad="""
            Every value the lookup does not know, a typo (`"bf-16"`), a new mode
            (`"fp8"`), or `"fp16"` where only `"bf16"` is mapped, trains in float32 with
            no error: the run is slower and larger than asked, and nobody notices.
            """,
        example="""
            dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
            """,
        use_instead="""
            DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
            dtype = DTYPES[precision]  # an unknown precision is a KeyError, not float32
            """,
        known_limits="""
            A fallback spread over several statements (`if ... elif ... else: dtype =
            torch.float32`) is only seen when the `else` branch assigns float32 directly
            and an earlier branch assigns a low-precision dtype. A lookup validated
            elsewhere (an argparse `choices=` list, a check in another class) is still
            reported. A choice is only taken for a lookup when its test compares a value
            (`precision == "bf16"`, `mode in (...)`): a boolean switch (`if use_amp`) is a
            two-way choice whose float32 is meant, a comparison with a dtype object
            (`input_dtype == torch.bfloat16`) checks an input, and a test naming a storage
            dtype (`args.target_params_dtype == "fp16"`) chooses parameter storage. A `.get`/`getattr` whose key is a
            storage dtype (`param-dtype-names`, such as `"momentum_dtype"`) is an option's
            default, not a fallback; nothing in a data-side class or module (`data-side-names`:
            loaders, pre-processing), an entry point (`entry-point-functions`, such as
            `from_pretrained`: the fallback is the user's default), quantised code (see
            DTL101) or test code is reported;
            nor is `x or float32` where `x` names a storage or
            communication dtype (`mixed_precision.reduce_dtype or torch.float32`).
            """,
    )
    message = (
        "unrecognised precision values fall back to float32 and train in float32 silently; "
        "validate the value and raise on unknown ones"
    )
    reports_in_tests = False  # a test's float32 is the test's choice
    options_used = ("param-dtype-names", "data-side-names", "entry-point-functions")

    def report(self, node, message=None, replace=None) -> None:
        # In a data-side class or module (loaders, pre-processing), float32 is the data's
        # dtype. (A function's name alone does not say so: `loader_dtype` picks a dtype.)
        cls = self.ctx.current_class
        names = (cls.name if cls else "", self.ctx.module_stem)
        if any(matches_any(name.lower(), self.options.data_side_names) for name in names):
            return
        # An entry point's fallback is the user's default, as its parameters' defaults
        # are (DTL101); quantised code's float32 is its low-bit format's.
        function = self.ctx.function
        if function is not None and matches_any(function.name, self.options.entry_point_functions):
            return
        if self.ctx.layers(self.options).quantised(key_of(self.ctx)):
            return
        super().report(node, message, replace)
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: f32(t) and (u is None or _fallback(u.index, u.lines)),
                         import_words=("float", "half", "double", "single", "bfloat16", "dtype"))

    valid = (
        "dtype = DTYPES[precision]",
        "dtype = mapping.get(precision, torch.bfloat16)",
        "dtype = x.dtype if x.dtype == torch.float16 else torch.float32",
        "if x.dtype == torch.float16:\n    y = 1\nelse:\n    y = torch.float32",
        "dtype = torch.bfloat16 if use_cpu_amp else torch.float32",
        'state = getattr(torch, opts.get("momentum_dtype", "float32"))',
        "out = torch.bfloat16 if in_dtype == torch.bfloat16 else torch.float32",
        'if args.params_dtype == "fp16":\n    d = torch.float16\nelse:\n    d = torch.float32',
    )
    invalid = (
        Invalid("dtype = mapping.get(precision, torch.float32)"),
        Invalid("import jax.numpy as jnp\ndtype = config.dtype or jnp.float32"),
        Invalid('dtype = torch.bfloat16 if precision == "bf16" else torch.float32'),
        Invalid('dtype = getattr(config, "torch_dtype", torch.float32)'),
        Invalid('if mp == "bf16":\n    dtype = torch.bfloat16\nelse:\n    dtype = torch.float32'),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "get" and len(node.args) == 2:
            key, default = node.args[0].value, node.args[1].value
        elif self.ctx.resolve(func) == "getattr" and len(node.args) == 3:
            key, default = node.args[1].value, node.args[2].value
        else:
            return
        if is_float32(default, self.ctx) and not self._storage_key(key):
            self.report(default)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if isinstance(node.operator, cst.Or) and is_float32(node.right, self.ctx):
            # An unset storage or communication dtype (`reduce_dtype or float32`) is not
            # a precision lookup.
            left = self.ctx.module.code_for_node(node.left)
            if not any(name in left for name in self.options.param_dtype_names):
                self.report(node.right)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if self._not_a_lookup(node.test):
            return  # an input's dtype check (an island) or a boolean switch: not a lookup
        if is_float32(node.orelse, self.ctx) and dtype_name(node.body, self.ctx) in LOW_PRECISION:
            self.report(node.orelse)

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
                self.report(fallback)
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


# The rule's shape, checked on CPython's ast by the prefilter (see its Prefilter).
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
