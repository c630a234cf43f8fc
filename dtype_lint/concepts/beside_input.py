"""Float32 pinned beside an input outside a layer's forward (``POLICY.md`` F1): in a
function given tensors, a value created on an input's device but in float32
(``torch.zeros(n, device=x.device, dtype=torch.float32)``), or a value cast to float32
and combined with another tensor, with no cast back in the function: the helper's result
meets the caller's activations in float32. A layer's forward is the forward-pin
concept's; loss classes, user-facing wrappers and data-side code are not a layer's."""

from __future__ import annotations

import ast
from typing import Sequence

from dtype_lint.concepts.activations import host_side_dtype, in_loss_or_entry_class, is_layer_forward, mentions_loss_side
from dtype_lint.concepts.float32 import not_float_value
from dtype_lint.concepts.layer_facts import key_of, layer_facts
from dtype_lint.concepts.storage import NOT_FLOAT_WORDS
from dtype_lint.core.calls import argument, method_name
from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import LOW_PRECISION, dtype_name, is_float32, is_numpy_call
from dtype_lint.core.options import Options
from dtype_lint.core.rule import Finder, Site
from dtype_lint.core.shapes import Index, Prefilter, f32, lines_of
from dtype_lint.core.traversal import parents as parents_of
from dtype_lint.core.words import matches_any
from dtype_lint.frameworks.casts import TYPE_CAST_METHODS

_ARITHMETIC = ("Multiply", "Add", "Subtract", "Divide", "MatrixMultiply")  # operator node names
# Names of integer, index and mask tensors: they have no floating dtype to follow.
_NOT_FLOAT_WORDS = (*NOT_FLOAT_WORDS, "label", "len")


class PinnedBesideInput(Finder):
    """Float32 made on an input's device, or cast and combined with another tensor, outside a forward."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: f32(t) and (u is None or _pinned_beside_input(u.index, u.lines)),
                         import_words=("float", "half", "double", "single", "bfloat16", "dtype"))

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
                or layer_facts(self.ctx, self.options).on_forward_path(key_of(self.ctx))
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
                    # Outside a layer's forward: that the helper's result meets the
                    # activations is assumed from the input it is made beside, a pattern
                    # (outside readers judged 5 of the first 8 such findings real).
                    self.found(Site(node, {"how": how}, context=(original_node, parents), confidence="low",
                                    basis="outside a layer's forward: the result's meeting the activations is assumed"))

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


# The finder's shape, checked on CPython's ast by the prefilter.
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
