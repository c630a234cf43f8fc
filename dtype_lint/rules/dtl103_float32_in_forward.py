"""DTL103: float32 pinned inside a layer's forward/__call__ with no cast back."""

from __future__ import annotations

import libcst as cst

from dtype_lint.catalog import RuleDoc
from dtype_lint.dtypes import is_float32
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.patterns import argument, method_name

_FORWARD_NAMES = frozenset({"forward", "__call__"})
_CASTS = frozenset({"to", "astype", "type"})


class Float32InForward(Rule):
    doc = RuleDoc(
        code="DTL103",
        name="float32-in-forward",
        summary="float32 pinned inside forward/__call__",
        what_it_does="""
            Checks `forward` and `__call__` methods of layers (torch, Lightning and Flax
            modules, and classes deriving from another layer) for tensors created or cast
            with a hardcoded float32 dtype (`torch.zeros(n, dtype=torch.float32)`,
            `x.to(torch.float32)`, `x.astype(jnp.float32)`) when nothing in the method
            casts back to an input's dtype or a configured dtype.
            """,
        why_bad="""
            Inside a layer, a pinned float32 makes every later operation float32: a
            bfloat16 model spends float32 time and memory from that point on, and its
            output dtype no longer follows its inputs.
            """,
        example="""
            def forward(self, x):
                pe = torch.zeros(x.shape[1], self.dim, dtype=torch.float32, device=x.device)
                return x + pe
            """,
        use_instead="""
            def forward(self, x):
                pe = torch.zeros(x.shape[1], self.dim, dtype=x.dtype, device=x.device)
                return x + pe
            """,
        known_limits="""
            A float32 island is recognised by a cast in the same method whose dtype
            mentions `dtype` (`.to(x.dtype)`, `.astype(self.dtype)`, `type_as`): a cast
            back in a helper the method calls is not seen. Methods other than `forward`
            and `__call__` are not checked.
            """,
    )
    message = (
        "float32 pinned in {method}: everything after it runs in float32 whatever the "
        "input dtype; use the input's dtype (x.dtype) or the layer's configured dtype"
    )
    triggers = ("float32", "torch.float")
    valid = (
        "class L(nn.Module):\n    def forward(self, x):\n        return x.to(x.dtype)",
        "class L(nn.Module):\n    def forward(self, x):\n"
        "        y = x.to(torch.float32).softmax(-1)\n        return y.to(x.dtype)",
        "class L(nn.Module):\n    def setup(self):\n        self.w = torch.zeros(3, dtype=torch.float32)",
        "def forward(x):\n    return x.to(torch.float32)",
        "class L(nn.Module):\n    def forward(self, x):\n        assert x.dtype == torch.float32\n        return x",
    )
    invalid = (
        Invalid("class L(nn.Module):\n    def forward(self, x):\n"
                "        return x + torch.zeros(3, dtype=torch.float32)"),
        Invalid("import jax.numpy as jnp\nclass L(nn.Module):\n    def __call__(self, x):\n"
                "        return x.astype(jnp.float32) * 2"),
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # For each open forward method: its pinned float32 nodes, and whether it casts back.
        self._stack: list[tuple[cst.FunctionDef, list[cst.CSTNode], list[bool]]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value in _FORWARD_NAMES and self._is_layer_method():
            self._stack.append((node, [], [False]))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self._stack and self._stack[-1][0] is original_node:
            node, pinned, casts_back = self._stack.pop()
            if not casts_back[0]:
                for pin in pinned:
                    self.report(pin, self.message.format(method=node.name.value))

    def visit_Call(self, node: cst.Call) -> None:
        if not self._stack:
            return
        _, pinned, casts_back = self._stack[-1]
        name = method_name(node)
        if name == "type_as":
            casts_back[0] = True
            return
        dtype = argument(node, 0, "dtype") if name in _CASTS else argument(node, None, "dtype")
        if dtype is None:
            return
        if is_float32(dtype, self.ctx):
            pinned.append(dtype)
        elif "dtype" in self.ctx.module.code_for_node(dtype).lower():
            casts_back[0] = True

    def _is_layer_method(self) -> bool:
        cls = self.ctx.method_class()
        if cls is None:
            return False
        if cls.kinds & {"torch_module", "flax_module"}:
            return True
        # A class deriving from some other layer we cannot resolve.
        return any(b.endswith(("Module", "Layer", "Block", "Model")) for b in cls.bases)
