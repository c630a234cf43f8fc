"""Float32 that gets in without the token (``POLICY.md`` F1): ``.float()``,
``torch.FloatTensor``, a creation whose dtype torch's default decides (``torch.ones(n)``,
``torch.empty(...)``, ``torch.arange(0.5, n)``, ``torch.tensor([0.5])``,
``torch.linspace(...)``) and the true division of an integer ``arange``. On a layer's
forward path, such a value is a hazard where it meets the activations: arithmetic with
them, a concatenation with them, or a sub-layer's input, with no cast to their dtype in
the function. A method of the class that returns such a value (a mask or table builder)
makes its call one too. Masks used as booleans or indices never meet the activations
arithmetically, and are not reported."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

from dtype_lint.concepts.activations import in_loss_or_entry_class, is_layer_forward, LOSS_SIDE_WORDS
from dtype_lint.concepts.layer_facts import key_of, layer_facts
from dtype_lint.concepts.storage import NOT_FLOAT_WORDS
from dtype_lint.core.calls import method_name
from dtype_lint.core.deferred import cst
from dtype_lint.core.rule import Finder, Site
from dtype_lint.core.shapes import Prefilter
from dtype_lint.core.traversal import descendants
from dtype_lint.core.words import matches_any, words_of

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.options import Options

# Creations whose dtype is torch's default (float32) when none is given.
_FLOAT_CREATIONS = frozenset({"ones", "zeros", "empty", "full", "rand", "randn", "linspace", "logspace", "eye"})
# Creations that are float only when given a float: arange(0.5, n), tensor([0.1]).
_VALUE_CREATIONS = frozenset({"arange", "tensor", "as_tensor"})
# Methods that take a value out of float32 (a cast) or out of floating point altogether.
_CASTS = frozenset({"to", "type", "type_as", "half", "bfloat16", "double", "bool", "long", "int", "short", "byte",
                    "char", "numpy", "tolist", "item", "float"})
_INTEGER_DTYPES = frozenset({"long", "int", "int64", "int32", "int16", "int8", "uint8", "bool"})
# What a tensor tells of itself besides its values.
_METADATA = frozenset({"shape", "device", "dtype", "ndim", "size", "dim", "is_cuda", "numel"})
_COMBINE = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack"})
_ARITHMETIC = frozenset({"Add", "Subtract", "Multiply", "Divide", "MatrixMultiply", "Power"})  # operator node names
_NOT_ACTIVATION_WORDS = frozenset({*NOT_FLOAT_WORDS, "len", "lens", "length", "lengths", "label", "labels", "shape",
                                   "size", "step", "steps", "timestep", "timesteps", "t", "n", "num", "seq", "dim",
                                   "device", "dtype", "config", "cfg", "position", "positions", "pos"})
_CANDIDATE = re.compile(r"\.float\(\s*\)|FloatTensor|torch\.(?:ones|zeros|empty|full|rand|randn|linspace|logspace|eye"
                        r"|arange|tensor|as_tensor)\s*\(")


_SELF_CALL = re.compile(r"\bself\.(\w+)\s*\(")


def _torch_call(call: cst.Call, ctx: FileContext) -> str | None:
    qualified = ctx.resolve(call.func) or ""
    return qualified.rsplit(".", 1)[-1] if qualified.startswith("torch.") and qualified.count(".") == 1 else None


def _has_float_literal(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Float) for n in descendants(node))


def source_kind(node: cst.CSTNode, ctx: FileContext) -> str | None:
    """What makes ``node`` a float32 value without naming float32, or None."""
    if isinstance(node, cst.Call):
        if method_name(node) == "float" and not node.args:
            return "`.float()`"
        qualified = ctx.resolve(node.func) or ""
        if qualified.endswith("FloatTensor") and qualified.startswith("torch."):
            return "torch.FloatTensor"
        name = _torch_call(node, ctx)
        if name is None or any(a.keyword is not None and a.keyword.value == "dtype" for a in node.args):
            return None
        if name in _FLOAT_CREATIONS:
            if name == "full" and not (len(node.args) > 1 and _has_float_literal(node.args[1].value)):
                return None
            if node.args and isinstance(node.args[0].value, cst.Integer) and node.args[0].value.value == "0":
                return None  # `torch.empty(0)`: a placeholder that holds no value
            return f"torch.{name}() with torch's default dtype"
        if name in _VALUE_CREATIONS and node.args and any(_has_float_literal(a.value) for a in node.args
                                                          if a.keyword is None):
            return f"torch.{name}() of floats with torch's default dtype"
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        left = node.left
        if isinstance(left, cst.Call) and _torch_call(left, ctx) == "arange" and not any(
                a.keyword is not None and a.keyword.value == "dtype" for a in left.args):
            return "an integer torch.arange() divided (true division makes float32)"
    return None


class _Flow:
    """Which names of one function hold implicit float32 (with the sources behind them) and
    which hold the activations, read in source order."""

    def __init__(self, ctx: FileContext, activations: set[str], returns: dict[str, list[cst.CSTNode]]) -> None:
        self.ctx = ctx
        self.float32: dict[str, list[cst.CSTNode]] = {}
        self.activations = set(activations)
        self.returns = returns  # methods of the class whose result is implicit float32
        self.meetings: list[tuple[cst.CSTNode, list[cst.CSTNode], str]] = []
        self.returned: list[cst.CSTNode] = []

    def sources(self, expr: cst.BaseExpression) -> list[cst.CSTNode]:
        """The implicit float32 sources an expression's value carries (empty: none)."""
        if source_kind(expr, self.ctx):
            return [expr]
        if isinstance(expr, cst.Name):
            return self.float32.get(expr.value, [])
        if isinstance(expr, cst.Call):
            name = method_name(expr)
            func = expr.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self" \
                    and self.returns.get(func.attr.value):
                return [expr]
            if name in _CASTS and not (name == "to" and not _to_dtype(expr)):
                return []
            if isinstance(func, cst.Attribute) and not (isinstance(func.value, cst.Name) and func.value.value in (
                    "torch", "F", "self", "math", "np")):
                return self.sources(func.value)  # a method of the value: .unsqueeze(), .expand(), .cos()
            if _torch_call(expr, self.ctx) and not self.activation(expr):
                return [s for a in expr.args for s in self.sources(a.value)]
            return []
        if isinstance(expr, cst.BinaryOperation):
            if self.activation(expr.left) or self.activation(expr.right):
                return []
            return self.sources(expr.left) + self.sources(expr.right)
        if isinstance(expr, cst.Subscript):
            return self.sources(expr.value)
        if isinstance(expr, (cst.UnaryOperation,)):
            return self.sources(expr.expression)
        return []

    def activation(self, expr: cst.BaseExpression) -> bool:
        """Whether the expression carries the activations (a forward input, a layer's
        output); their shape, device or dtype read off them is not their values."""
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Attribute) and node.attr.value in _METADATA:
                continue
            if isinstance(node, cst.Call) and (method_name(node) in _METADATA or (
                    isinstance(node.func, cst.Name) and node.func.value == "len")):
                continue
            if isinstance(node, cst.Name) and node.value in self.activations:
                return True
            if isinstance(node, cst.Call) and _layer_call(node, self.returns):
                return True
            stack.extend(c for c in node.children if isinstance(c, cst.CSTNode))
        return False

    def read(self, statement: cst.CSTNode) -> None:
        # What is made into integers or booleans (`(torch.rand(n) * lengths).long()`)
        # is an index: nothing there meets the activations as values.
        # Likewise what is cast to a dtype on the spot (`(x.float() * t).to(x.dtype)`).
        integral = {id(n) for call in descendants(statement) if isinstance(call, cst.Call) and (
                    _to_integers(call) or _cast_back(call)) for n in descendants(call.func)}
        for node in descendants(statement):
            if id(node) in integral:
                continue
            if isinstance(node, cst.BinaryOperation) and type(node.operator).__name__ in _ARITHMETIC:
                for mine, other in ((node.left, node.right), (node.right, node.left)):
                    found = self.sources(mine)
                    if found and self.activation(other):
                        self.meetings.append((node, found, "arithmetic with the activations"))
            elif isinstance(node, cst.Call):
                name = _torch_call(node, self.ctx) or method_name(node)
                elements = [e.value for a in node.args[:1] if isinstance(a.value, (cst.List, cst.Tuple))
                            for e in a.value.elements]
                if name in _COMBINE and elements and any(self.activation(e) for e in elements):
                    for element in elements:
                        if found := self.sources(element):
                            self.meetings.append((node, found, "concatenated with the activations"))
                elif _layer_call(node, self.returns):
                    for arg in node.args:
                        if found := self.sources(arg.value):
                            # A mask handed to a sub-layer may serve it as booleans or
                            # positions: its meeting the activations is a guess there.
                            named = self.ctx.module.code_for_node(arg).lower()
                            how = ("a sub-layer's input (a mask, whose use there is not seen)"
                                   if any(w in named for w in NOT_FLOAT_WORDS) else "a sub-layer's input")
                            self.meetings.append((node, found, how))

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Name):
            return
        found = self.sources(value)
        if found:
            self.float32[target.value] = found
            self.activations.discard(target.value)
        else:
            self.float32.pop(target.value, None)
            if self.activation(value):
                self.activations.add(target.value)


def _cast_back(call: cst.Call) -> bool:
    """A cast to a dtype taken from a value or to a low float: `.to(x.dtype)`, `type_as`."""
    name = method_name(call)
    return name in ("type_as", "half", "bfloat16") or (name in ("to", "type") and _to_dtype(call))


def _to_integers(call: cst.Call) -> bool:
    """``.long()``, ``.int()``, ``.bool()``, ``.to(torch.long)``: a cast out of floating point."""
    name = method_name(call)
    if name in ("long", "int", "bool", "short", "byte"):
        return True
    return name == "to" and any(isinstance(a.value, cst.Attribute) and a.value.attr.value in _INTEGER_DTYPES
                                for a in call.args)


def _to_dtype(call: cst.Call) -> bool:
    """``.to(...)`` with a dtype (positional or keyword), not only a device."""
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == "dtype":
                return True
            continue
        text = arg.value
        if isinstance(text, cst.Attribute) and text.attr.value in ("dtype", "float16", "bfloat16", "half"):
            return True
        if isinstance(text, cst.Name) and "dtype" in text.value:
            return True
    return False


def _layer_call(call: cst.Call, methods: dict) -> bool:
    """``self.<attr>(...)`` where ``attr`` is no method of the class: a sub-layer."""
    func = call.func
    return (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
            and func.attr.value not in methods and not func.attr.value.startswith("_"))


def _statements(body: cst.BaseSuite) -> Iterator[cst.CSTNode]:
    """The small statements of a body, in source order, entering compound statements
    (not nested functions or classes)."""
    for stmt in getattr(body, "body", ()):
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        elif isinstance(stmt, cst.If):
            yield stmt.test
            yield from _statements(stmt.body)
            orelse = stmt.orelse
            while isinstance(orelse, cst.If):
                yield orelse.test
                yield from _statements(orelse.body)
                orelse = orelse.orelse
            if orelse is not None:
                yield from _statements(orelse.body)
        elif isinstance(stmt, (cst.For, cst.While, cst.With, cst.Try)):
            yield from _statements(stmt.body)
            for handler in getattr(stmt, "handlers", ()):
                yield from _statements(handler.body)
            for part in ("orelse", "finalbody"):
                extra = getattr(stmt, part, None)
                if extra is not None:
                    yield from _statements(extra.body)


def _run(flow: _Flow, function: cst.FunctionDef) -> None:
    for small in _statements(function.body):
        if isinstance(small, cst.Assign):
            flow.read(small.value)
            for target in small.targets:
                flow.bind(target.target, small.value)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            flow.read(small.value)
            flow.bind(small.target, small.value)
        elif isinstance(small, cst.AugAssign):
            flow.read(cst.BinaryOperation(small.target, _aug(small.operator), small.value))
        elif isinstance(small, cst.Return) and small.value is not None:
            flow.read(small.value)
            flow.returned += flow.sources(small.value)
        elif isinstance(small, cst.BaseExpression) or isinstance(small, cst.Expr):
            flow.read(small)


def _aug(operator: cst.BaseAugOp) -> cst.BaseBinaryOp:
    table = {cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
             cst.DivideAssign: cst.Divide}
    return table.get(type(operator), cst.Add)()


def _casts_back(function: cst.FunctionDef, ctx: FileContext) -> bool:
    """A cast to a dtype taken from a value or the layer in the function (`.to(x.dtype)`,
    `type_as`, `.to(dtype=...)`): an island that may restore the activations' dtype."""
    return any(isinstance(node, cst.Call) and _cast_back(node) for node in descendants(function.body))


class ImplicitFloat32(Finder):
    """Float32 made without naming it (`.float()`, a default-dtype creation) that meets the activations on a layer's forward path."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        def calls_a_builder(t: str, u) -> bool:
            # A method that calls another of the file's functions holding a candidate
            # (`self._build_causal_mask(...)`): the value is made there, met here.
            return u is None or any(_CANDIDATE.search(u.function_text(name)) for name in set(_SELF_CALL.findall(t)))

        return Prefilter(lambda t, lc, u: bool(_CANDIDATE.search(t)) or ("self." in t and calls_a_builder(t, u)),
                         import_words=("torch",))

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._returns: list[dict[str, list[cst.CSTNode]]] = []  # per open class: builders

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        # First the class's methods that return implicit float32 (mask and table builders).
        builders: dict[str, list[cst.CSTNode]] = {}
        methods = [s for s in node.body.body if isinstance(s, cst.FunctionDef)]
        names = {m.name.value: [] for m in methods}
        for method in methods:
            flow = _Flow(self.ctx, set(), names)
            _run(flow, method)
            if flow.returned:
                builders[method.name.value] = flow.returned
        self._returns.append({**names, **builders})
        self._builders = builders

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        if self._returns:
            self._returns.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        cls = self.ctx.method_class()
        if cls is None or not self._returns or in_loss_or_entry_class(self.ctx, self.options):
            return
        name = node.name.value
        forward = is_layer_forward(self.ctx, name)
        if not (forward or layer_facts(self.ctx, self.options).on_forward_path(key_of(self.ctx))):
            return
        if matches_any(name.lower(), self.options.data_side_names) or any(w in name.lower() for w in LOSS_SIDE_WORDS):
            return
        params = [p.name.value for p in (*node.params.params, *node.params.kwonly_params)][1:]
        activations = {p for p in params if not (words_of(p) & _NOT_ACTIVATION_WORDS)}
        methods = self._returns[-1]
        flow = _Flow(self.ctx, activations, {k: v for k, v in methods.items()})
        # A builder's call carries the builder's own sources: report those, where written.
        builders = {k: v for k, v in methods.items() if v}
        _run(flow, node)
        island = _casts_back(node, self.ctx)
        seen: set[int] = set()
        for meeting, sources, how in flow.meetings:
            code = self.ctx.module.code_for_node(meeting).lower()
            if any(word in code for word in LOSS_SIDE_WORDS):
                continue
            for source in sources:
                through = None
                if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and \
                        source.func.attr.value in builders and isinstance(source.func.value, cst.Name):
                    through = source.func.attr.value
                for made in builders[through] if through else [source]:
                    if id(made) in seen:
                        continue
                    seen.add(id(made))
                    self._report(made, how, forward and not through, island, through)

    def _report(self, made: cst.CSTNode, how: str, direct: bool, island: bool, through: str | None) -> None:
        # Outside readers judged 7 of 67 such findings real (perf corpus and corpora, the
        # default level at first): where the dtype is restored (a helper or kernel that
        # casts back, a loss or metric) is not followed, so every one is the audit mode's.
        kind = source_kind(made, self.ctx) or "implicit float32"
        where = (f"built by self.{through}() and met in the forward" if through else
                 "in a layer's forward" if direct else "in a helper on the forward path")
        basis = (f"a pattern ({where}): where the dtype is restored after it (a helper or kernel that casts "
                 "back, the loss) is not followed")
        if island:
            basis += "; the function also casts to a dtype it takes from a value"
        self.found(Site(made, {"kind": kind, "how": how}, confidence="low", basis=basis))
