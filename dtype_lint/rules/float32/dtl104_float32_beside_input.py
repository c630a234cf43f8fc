"""DTL104: float32 pinned right beside an input tensor, outside a layer's forward."""

from __future__ import annotations

import ast
from typing import Sequence

from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import LOW_PRECISION, dtype_name, is_float32, is_numpy_call
from dtype_lint.core.flow.float32 import not_float_value
from dtype_lint.core.layers import NOT_FLOAT_WORDS, key_of
from dtype_lint.core.shapes import Index, Prefilter, f32, lines_of
from dtype_lint.core.traversal import parents as parents_of
from dtype_lint.frameworks.casts import TYPE_CAST_METHODS
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options
from dtype_lint.rules.patterns import (
    argument,
    deliberate_float32,
    host_side_dtype,
    in_loss_or_entry_class,
    is_layer_forward,
    matches_any,
    mentions_loss_side,
    method_name,
)

_ARITHMETIC = ("Multiply", "Add", "Subtract", "Divide", "MatrixMultiply")  # operator node names
# Names of integer, index and mask tensors: they have no floating dtype to follow.
_NOT_FLOAT_WORDS = (*NOT_FLOAT_WORDS, "label", "len")


class Float32BesideInput(Rule):
    doc = RuleDoc(
        code="DTL104",
        name="float32-beside-input",
        summary="float32 pinned beside an input tensor",
        what_it_does="""
            Checks functions and methods (other than a layer's forward path, which is
            DTL103's: its forward methods and the helpers of the file they call)
            for two ways of pinning float32 right next to an input tensor:
            a tensor created on the input's device but in float32
            (`torch.zeros(x.shape, dtype=torch.float32, device=x.device)`), and a tensor
            cast to float32 and combined in arithmetic with one that is not
            (`feats * mask.to(torch.float32)`). Functions that cast back to an input's
            dtype or a low-precision dtype are float32 islands and are not reported, nor
            is the loss side (`loss * mask.to(torch.float32)`, loss classes), arithmetic
            with a NumPy array (host-side), or a device taken from an integer, index or mask tensor
            (`device=input_ids.device`), which has no floating dtype to follow. Nor are
            casts of values with no floating dtype (a comparison, an inverted mask, an
            array made with an integer dtype), functions and classes on the data side
            (`data-side-names`), pins whose value flows into a sin/cos/exp table, into
            integers or into logits without being applied to a sub-layer there
            (`rules.patterns.deliberate_float32`), and a layer's forward path (DTL103's).
            Shared with DTL103: quantised code, bit reinterpretation
            (`.view(dtype=...)`), parameter and buffer storage, in-place (module) casts,
            values handed to a helper that casts back, modules kept in float32 by name
            (`_keep_in_fp32_modules`), a private helper (`_name`) whose every call in the
            file has its result cast back by the caller (followed through names,
            containers, arithmetic and the values it flows into before the cast: an
            integer codebook decoded in float32 and cast to the weights' dtype), and test
            code. A cast to a NumPy
            dtype in a file that imports no framework taking NumPy dtypes (torch code)
            makes a host-side array and is not reported.
            """,
        why_bad="""
            The code follows the input in one respect (its device, its values) and pins
            the other: a bfloat16 or float16 input comes back as float32, or is promoted
            to float32 by the arithmetic, so everything downstream runs in float32 and
            the result no longer has the dtype the caller passed in.
            """,
        example="""
            def refine(heatmap):
                out = torch.zeros(heatmap.shape, dtype=torch.float32, device=heatmap.device)
                return out + heatmap
            """,
        use_instead="""
            def refine(heatmap):
                out = torch.zeros_like(heatmap)  # or dtype=heatmap.dtype
                return out + heatmap
            """,
        known_limits="""
            Only a device written as `<parameter>.device` counts as following an input: a
            device kept in a variable is not traced. A float32 cast is seen in arithmetic
            only where both operands are written in the same expression; one stored in a
            variable first is not followed. `.float()` is not treated as a pin (it is
            mostly used for masks and metrics). Integer and mask tensors are recognised
            by name only (`ids`, `index`, `mask`, `labels`, `lens`).
            """,
    )
    reports_in_tests = False  # a test's float32 is the test's choice
    options_used = ("data-side-names",)
    message = (
        "float32 pinned beside an input tensor ({how}): a bf16/fp16 input comes back as "
        "float32; use the input's dtype (x.dtype, zeros_like, .to(x.dtype))"
    )
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: f32(t) and (u is None or _pinned_beside_input(u.index, u.lines)),
                         import_words=("float", "half", "double", "single", "bfloat16", "dtype"))

    valid = (
        "def f(x):\n    return torch.zeros(x.shape, dtype=x.dtype, device=x.device)",
        "def f(a, b):\n    return (a.to(torch.float32) - b.to(torch.float32)).norm()",
        "def f(loss, mask):\n    return loss * mask.to(torch.float32)",
        "def f(x, device):\n    return torch.tensor([1.0], dtype=torch.float32, device=device)",
        "def f(x, m):\n    y = x * m.to(torch.float32)\n    return y.to(x.dtype)",
        "def f(x):\n    return 2 * x.to(torch.float32)",
        "def scores(input_ids, beams):\n"
        "    return torch.zeros((input_ids.shape[0], beams), dtype=torch.float, device=input_ids.device)",
        "import numpy as np\ndef prior(counts):\n    return counts.astype(np.float32) / np.sum(counts)",
    )
    invalid = (
        Invalid("def refine(h):\n    out = torch.zeros(h.shape, dtype=torch.float32, device=h.device)\n"
                "    return out + h"),
        Invalid("def sample(feats, mask):\n    return feats * mask.to(torch.float32)"),
        Invalid("import jax.numpy as jnp\nclass Post:\n    def run(self, x, m):\n"
                "        return x + m.astype(jnp.float32)"),
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # For each open function: (node, parameter names, pins with how, casts back?)
        self._stack: list[tuple[cst.FunctionDef, set[str], list[tuple[cst.CSTNode, str]], list[bool]]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = {p.name.value for p in (*node.params.params, *node.params.kwonly_params, *node.params.posonly_params)}
        params.discard("self")
        # A layer's forward is DTL103's, which reports every pin there; loss classes and
        # user-facing wrappers are not pinning a layer's dtype.
        cls = self.ctx.method_class()
        if (is_layer_forward(self.ctx, node.name.value) or in_loss_or_entry_class(self.ctx, self.options)
                or self.ctx.layers(self.options).on_forward_path(key_of(self.ctx))
                or any(matches_any(name.lower(), self.options.data_side_names)
                       for name in (node.name.value, cls.name if cls else "", self.ctx.module_stem))):
            params = set()
        self._stack.append((node, params, [], [False]))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self._stack and self._stack[-1][0] is original_node:
            _, _, pins, casts_back = self._stack.pop()
            if not casts_back[0]:
                parents = parents_of(original_node) if pins else {}
                for node, how in pins:
                    if not deliberate_float32(node, original_node, parents, self.ctx, self.options):
                        self.report(node, self.message.format(how=how))

    def visit_Call(self, node: cst.Call) -> None:
        if not self._stack:
            return
        _, params, pins, casts_back = self._stack[-1]
        name = method_name(node)
        if name == "view":
            return  # `w.view(torch.float32)` reinterprets bits: no value changes precision
        dtype = argument(node, 0, "dtype") if name in TYPE_CAST_METHODS else argument(node, None, "dtype")
        if dtype is None:
            return
        if dtype_name(dtype, self.ctx) in LOW_PRECISION or (
            not is_float32(dtype, self.ctx) and "dtype" in self.ctx.module.code_for_node(dtype).lower()
        ):
            casts_back[0] = True
        elif params and name not in TYPE_CAST_METHODS and is_float32(dtype, self.ctx):
            device = argument(node, None, "device")
            if _attribute_of(device, "device", params) and not any(
                word in device.value.value.lower() for word in _NOT_FLOAT_WORDS  # type: ignore[union-attr]
            ):
                pins.append((dtype, "created on the input's device but in float32"))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not self._stack or not self._stack[-1][1] or type(node.operator).__name__ not in _ARITHMETIC:
            return
        left, right = self._float32_cast(node.left), self._float32_cast(node.right)
        if (left is None) == (right is None):
            return  # both operands pinned (or neither): nothing is promoted
        other = node.right if left else node.left
        if isinstance(other, cst.UnaryOperation) and isinstance(other.expression, (cst.Integer, cst.Float)):
            other = other.expression  # -1e9
        if isinstance(other, (cst.Integer, cst.Float)) or is_numpy_call(other, self.ctx):
            return  # a Python number or a NumPy array: nothing on the device is promoted
        if mentions_loss_side(node, self.ctx):
            return
        self._stack[-1][2].append((left or right, "cast to float32 and combined with another tensor"))

    def _float32_cast(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        """The dtype node of ``x.to(float32)`` / ``x.astype(float32)``, else None."""
        if isinstance(expr, cst.Call) and method_name(expr) in TYPE_CAST_METHODS:
            if not_float_value(expr.func.value, self.ctx):  # type: ignore[union-attr]
                return None  # booleans or integers made into floats: nothing to follow
            dtype = argument(expr, 0, "dtype")
            if dtype is not None and is_float32(dtype, self.ctx) and not host_side_dtype(dtype, self.ctx, self.options):
                return dtype
        return None


def _attribute_of(expr: cst.BaseExpression | None, attr: str, names: set[str]) -> bool:
    """``expr`` is ``<name>.<attr>`` for one of ``names``."""
    return (
        isinstance(expr, cst.Attribute)
        and expr.attr.value == attr
        and isinstance(expr.value, cst.Name)
        and expr.value.value in names
    )


# The rule's shape, checked on CPython's ast by the prefilter (see its Prefilter).
def _pinned_beside_input(index: Index, lines: Sequence[str]) -> bool:
    """DTL104: in a function with parameters, a call with ``dtype=`` float32 and
    ``device=<parameter>.device``, or a float32 cast that is an operand of arithmetic
    with something other than a number."""
    functions = index(ast.FunctionDef, ast.AsyncFunctionDef)
    if not functions:
        return False  # the rule reports only inside a function
    params = {a.arg for a in index(ast.arg)} - {"self"}
    for node in index(ast.Call, ast.BinOp):
        if isinstance(node, ast.Call):
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            device, dtype = keywords.get("device"), keywords.get("dtype")
            if (isinstance(device, ast.Attribute) and device.attr == "device" and isinstance(device.value, ast.Name)
                    and device.value.id in params and dtype is not None and f32(lines_of(dtype, lines))):
                return True
        elif isinstance(node, ast.BinOp):
            for operand, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(other, ast.UnaryOp) and isinstance(other.operand, ast.Constant):
                    other = other.operand  # -1e9
                if (isinstance(operand, ast.Call) and isinstance(operand.func, ast.Attribute)
                        and operand.func.attr in TYPE_CAST_METHODS
                        and not (isinstance(other, ast.Constant) and type(other.value) in (int, float))
                        and f32(lines_of(operand, lines))):
                    return True
    return False
