"""DTL102: a dtype lookup or precision switch that falls back to float32."""

from __future__ import annotations

import libcst as cst

from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.core.context import FileContext
from dtype_lint.frameworks.dtypes import LOW_PRECISION, dtype_name, is_float32
from dtype_lint.rules.base import Invalid, Rule


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
            default, not a fallback.
            """,
    )
    message = (
        "unrecognised precision values fall back to float32 and train in float32 silently; "
        "validate the value and raise on unknown ones"
    )
    triggers = ("float32", "torch.float", "float")
    options_used = ("param-dtype-names",)
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
        if fallback is None or not is_float32(fallback, self.ctx):
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


def _assigned_dtype(block: cst.BaseSuite) -> cst.BaseExpression | None:
    """The value of a lone `name = value` statement heading a block, if any."""
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return None
    first = block.body[0]
    if isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Assign):
        return first.body[0].value
    return None
