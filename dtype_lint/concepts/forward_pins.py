"""Float32 pinned on the forward path (``POLICY.md`` F1): inside a layer's forward (or a
function of the file it calls), a cast to float32, a creation in float32 or a typed
float32 scalar that meets the activations with no cast back to their dtype in the same
function; and a plain attribute made in float32 at init (``self.mean = torch.tensor(m,
dtype=torch.float32)``) that the forward mixes into the activations, which module casts
and dtype policies never reach. Not pins: values made for the loss side, host-side NumPy
arrays and exported values, 0-dim torch scalars made from Python numbers, integers and
booleans made into floats, a whole module's cast, parameter and state creation, and the
forwards of loss classes and user-facing wrappers."""

from __future__ import annotations

import ast
from typing import Sequence

from dtype_lint.concepts.activations import (STATE_UPDATES, STORAGE_CALLS, in_loss_or_entry_class, is_layer_forward,
                                             mentions_loss_side, numpy_dtypes_on_host)
from dtype_lint.concepts.casts import follows_a_dtype, positional_dtype
from dtype_lint.concepts.float32 import not_float_value
from dtype_lint.concepts.layer_facts import facts as layer_facts_of
from dtype_lint.concepts.layer_facts import key_of, layer_facts
from dtype_lint.concepts.layers import forward_name
from dtype_lint.concepts import modules as module_concepts
from dtype_lint.concepts.modules import modules
from dtype_lint.core.calls import argument, callee_name, method_name
from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import LOW_PRECISION, dtype_name, is_float32, is_numpy_call
from dtype_lint.core.options import Options
from dtype_lint.core.rule import Check, Finder, Site
from dtype_lint.core.shapes import Index, Prefilter, f32, lines_of, may_call, walk
from dtype_lint.core.traversal import descendants
from dtype_lint.core.traversal import parents as parents_of
from dtype_lint.frameworks.casts import TYPE_CAST_METHODS

# Methods that take a tensor off the device: a float32 cast right before them exports.
_EXPORTS = frozenset({"numpy", "tolist", "item"})
# Functions that cast their first argument to the dtype given second.
_CAST_FUNCTIONS = frozenset({"cast", "convert_element_type"})


def _loss_side_output(ctx, options: Options, hit) -> bool:
    """A softmax or log-softmax made in float32 whose value the function returns as it is
    (through a name read only by ``return`` and ``assert``): the output for the loss,
    which POLICY.md keeps in float32 on purpose."""
    if hit.site.context is None:
        return False
    function, parents = hit.site.context
    call = parents.get(id(hit.site.node))
    call = parents.get(id(call)) if isinstance(call, cst.Arg) else call
    if not isinstance(call, cst.Call) or (callee_name(call) or "") not in ("softmax", "log_softmax"):
        return False
    holder = parents.get(id(call))
    if isinstance(holder, cst.Return):
        return True
    if not (isinstance(holder, cst.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0].target, cst.Name)):
        return False
    name = holder.targets[0].target.value
    # Reads in the other branch of an `if` around the softmax see another value
    # (`if log: x = log_softmax(x) else: x = softmax(x)`).
    inside = {id(n) for n in descendants(holder)}  # its own reads are of the value before
    reads = [n for n in descendants(function.body) if isinstance(n, cst.Name) and n.value == name
             and id(n) not in inside and not _written(n, parents) and not _exclusive(n, holder, parents)]
    return bool(reads) and all(_returned(n, parents) or _read_by(n, parents, (cst.Assert,)) for n in reads)


def _returned(name: cst.Name, parents: dict) -> bool:
    """Whether the name is returned as it is (alone or in a tuple), not passed on."""
    holder = parents.get(id(name))
    if isinstance(holder, cst.Element):
        holder = parents.get(id(parents.get(id(holder))))
    return isinstance(holder, cst.Return)


def _written(name: cst.Name, parents: dict) -> bool:
    holder = parents.get(id(name))
    return isinstance(holder, cst.AssignTarget)


def _branches(node: cst.CSTNode, parents: dict) -> dict[int, int]:
    """For each `if` above the node: which branch holds it (its body or its else)."""
    out, child = {}, node
    node = parents.get(id(node))
    while node is not None:
        if isinstance(node, cst.If):
            out[id(node)] = 0 if child is node.body else 1 if child is node.orelse else -1
        child, node = node, parents.get(id(node))
    return out


def _exclusive(a: cst.CSTNode, b: cst.CSTNode, parents: dict) -> bool:
    """Whether the two nodes lie in different branches of one `if`."""
    of_a, of_b = _branches(a, parents), _branches(b, parents)
    return any(of_a[key] != of_b[key] and -1 not in (of_a[key], of_b[key]) for key in of_a.keys() & of_b.keys())


def _read_by(node: cst.CSTNode, parents: dict, kinds: tuple) -> bool:
    """Whether the node lies in a statement of one of ``kinds``."""
    while node is not None and not isinstance(node, cst.BaseSmallStatement):
        node = parents.get(id(node))
    return isinstance(node, kinds)


LOSS_SIDE_OUTPUT = Check("a softmax made in float32 and returned as the output for the loss", _loss_side_output)


def _converts_another_dtype(ctx, options: Options, hit) -> bool:
    """The pin runs under a test that a value's dtype is some dtype other than a low
    float (``if value.dtype == fm32: value = convert(value, float32)``): it converts a
    format the code names, not the activations' precision."""
    if hit.site.context is None:
        return False
    _, parents = hit.site.context
    node = parents.get(id(hit.site.node))
    while node is not None:
        if isinstance(node, cst.If) and isinstance(node.test, cst.Comparison) and isinstance(
                node.test.left, cst.Attribute) and node.test.left.attr.value == "dtype":
            others = [c.comparator for c in node.test.comparisons if isinstance(c.operator, cst.Equal)]
            return bool(others) and all(dtype_name(o, ctx) not in LOW_PRECISION and not (
                isinstance(o, cst.Attribute) and o.attr.value == "dtype") for o in others)
        node = parents.get(id(node))
    return False


CONVERTS_ANOTHER_DTYPE = Check("a conversion to float32 of a value the code first tests to hold another, named "
                               "dtype (a format such as fp8 meta, not the activations' precision)",
                               _converts_another_dtype, demotes="low")


class PinnedInForward(Finder):
    """Float32 pinned on a layer's forward path, or in a plain attribute the forward mixes in."""

    file_facts = staticmethod(module_concepts.file_facts)

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        def on_path(u, name: str) -> bool:
            # Whether a function of the file may be on a layer's forward path (concepts.layers),
            # which follows calls by name and through `self`: the text may call it (a cheap
            # superset), and then the layer facts say so.
            return not u.file_text or (may_call(u.file_text, name, called=True) and name in layer_facts_of(
                u.file_text, options, u.file_tree).helper_names)

        def mixed(u, cls: str, attr: str) -> bool:
            # The layer facts cost a walk of the file: only for an attribute read elsewhere.
            return u.file_text.count(f"self.{attr}") > 1 and layer_facts_of(
                u.file_text, options, u.file_tree).mixed_in_forward(cls, attr)

        return Prefilter(
            lambda t, lc, u: f32(t) and (u is None or _pinned_in_forward(u.index, u.lines,
                                                                         lambda name: on_path(u, name))
                                         or _plain_attribute(u, lambda cls, attr: mixed(u, cls, attr))),
            import_words=("float", "half", "double", "single", "bfloat16", "dtype"))

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # For each open forward method: its pinned float32 nodes, and whether it casts back.
        self._stack: list[tuple[cst.FunctionDef, list[cst.CSTNode], list[bool]]] = []
        self._exported: set[int] = set()  # casts whose result goes straight to the host
        self._storage: list[cst.Call] = []  # open calls that create parameters or state
        self._torch_only: bool | None = None

    def _host_side(self, node: cst.Call, name: str | None, dtype: cst.BaseExpression) -> bool:
        """A cast of a NumPy array: its receiver was taken to the host (``x.numpy()
        .astype(...)``), or, in torch code (no JAX-family import), an ``.astype`` or a
        NumPy dtype, which torch tensors do not take."""
        receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
        while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
            if receiver.func.attr.value in _EXPORTS:
                return True
            receiver = receiver.func.value
        if self._torch_only is None:
            self._torch_only = layer_facts(self.ctx, self.options).imports_any(frozenset({"torch"})) and (
                numpy_dtypes_on_host(self.ctx, self.options))
        if not self._torch_only:
            return False
        qualified = self.ctx.resolve(dtype) or ""
        return name == "astype" or qualified.split(".")[0] == "numpy"

    def _typed_scalar(self, node: cst.Call) -> bool:
        """``jnp.float32(v)``, or ``np.float32(v)`` in JAX code: a strongly typed float32
        scalar, which promotes the bf16/fp16 arrays it meets to float32 (a Python float
        would not; torch treats a NumPy scalar like one)."""
        if not node.args:
            return False
        qualified = self.ctx.resolve(node.func)
        if qualified == "jax.numpy.float32":
            return True
        cls = self.ctx.method_class()
        return qualified == "numpy.float32" and not (cls and "torch_module" in cls.kinds) and layer_facts(
            self.ctx, self.options).imports_any(frozenset({"jax", "flax"}))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if in_loss_or_entry_class(self.ctx, self.options):
            return
        if is_layer_forward(self.ctx, node.name.value) or layer_facts(self.ctx, self.options).on_forward_path(
                key_of(self.ctx)):
            self._stack.append((node, [], [False]))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self._stack and self._stack[-1][0] is original_node:
            node, pinned, casts_back = self._stack.pop()
            if casts_back[0] or not pinned:
                return
            parents = parents_of(node)
            guards = self._guards(casts_back[1:], parents)
            if guards is None:
                return
            for pin in pinned:
                # An upcast under the same test as its cast back is an island of its own.
                if any(_inside(pin, guard.body, parents) for guard in guards):
                    continue
                self.found(Site(pin, {"method": node.name.value}, context=(node, parents)))

    def _guards(self, casts: list, parents: dict[int, cst.CSTNode]) -> list[cst.If] | None:
        """The tests guarding casts back to a literal low dtype (``if w.dtype ==
        torch.float16: h = h.to(torch.float16)``), or None where the casts bring every
        low-precision input back: one outside any such test does, and so do guarded casts
        that cover float16 and bfloat16 together. A float16-only cast back leaves a
        bfloat16 model's activations in float32."""
        guards: list[cst.If] = []
        covered: set[str] = set()
        for cast in casts:
            found = self._dtype_guard(cast, parents)
            if found is None:
                return None
            guards.append(found[0])
            covered |= found[1]
        return None if {"float16", "bfloat16"} <= covered else guards

    def _dtype_guard(self, node: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> tuple[cst.If, set[str]] | None:
        """The ``if <x>.dtype == <dtype>:`` whose block holds ``node``, and the low dtypes
        its test admits; None where no such test encloses it."""
        child, parent = node, parents.get(id(node))
        while parent is not None and not isinstance(parent, cst.FunctionDef):
            if isinstance(parent, cst.If) and child is parent.body and isinstance(parent.test, cst.Comparison):
                sides = [parent.test.left, *(c.comparator for c in parent.test.comparisons)]
                if any(isinstance(s, cst.Attribute) and s.attr.value == "dtype" for s in sides) and all(
                        isinstance(c.operator, (cst.Equal, cst.Is, cst.In)) for c in parent.test.comparisons):
                    names = {dtype_name(e.value, self.ctx) for s in sides
                             for e in (s.elements if isinstance(s, (cst.List, cst.Tuple, cst.Set)) else ())} | {
                        dtype_name(s, self.ctx) for s in sides}
                    return parent, {n for n in names if n in LOW_PRECISION}
            child, parent = parent, parents.get(id(parent))
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        """``self.mean = torch.tensor(m, dtype=torch.float32)`` in a layer's ``__init__``
        or ``setup``: a plain attribute, which a module cast leaves in float32, is pinned
        where forward mixes it into the activations (``concepts.buffers``)."""
        function, cls = self.ctx.function, self.ctx.method_class()
        if (function is None or cls is None or function.name not in _INIT_METHODS
                or not isinstance(node.value, cst.Call)):
            return
        attrs = [t.target.attr.value for t in node.targets if isinstance(t.target, cst.Attribute)
                 and isinstance(t.target.value, cst.Name) and t.target.value.value == "self"]
        name = method_name(node.value)
        dtype = argument(node.value, 0, "dtype") if name in TYPE_CAST_METHODS else argument(node.value, None, "dtype")
        dtype = dtype if dtype is not None else positional_dtype(node.value, self.ctx)
        if (not attrs or dtype is None or not is_float32(dtype, self.ctx)
                or in_loss_or_entry_class(self.ctx, self.options)):
            return
        facts = layer_facts(self.ctx, self.options)
        if facts.quantised(key_of(self.ctx)):
            return
        for attr in attrs:
            if facts.mixed_in_forward(cls.name, attr):
                self.found(Site(dtype, {
                    "method": f"{function.name} on a plain attribute (self.{attr}) that forward mixes into the "
                              "activations; module casts and dtype policies reach parameters and buffers, not it"}))
                return

    def leave_Call(self, original_node: cst.Call) -> None:
        if self._storage and self._storage[-1] is original_node:
            self._storage.pop()

    def visit_Call(self, node: cst.Call) -> None:
        if not self._stack:
            return
        callee = method_name(node) or (node.func.value if isinstance(node.func, cst.Name) else None)
        if callee in STORAGE_CALLS or (callee or "").startswith(STATE_UPDATES):
            self._storage.append(node)  # its arguments make parameters or (cached) state
        if self._storage:
            return
        _, pinned, casts_back = self._stack[-1]
        if self._typed_scalar(node):
            if not mentions_loss_side(node, self.ctx):
                pinned.append(node)
            return
        name = method_name(node)
        if name == "view":
            return  # `w.view(torch.float32)` reinterprets bits: no value changes precision
        if name == "type_as":
            casts_back[0] = True
            return
        if name in _EXPORTS:
            self._exported.add(id(node.func.value))  # type: ignore[union-attr]
        dtype = argument(node, 0, "dtype") if name in TYPE_CAST_METHODS else argument(node, None, "dtype")
        if dtype is None:
            dtype = positional_dtype(node, self.ctx)
        if dtype is None and callee_name(node) in _CAST_FUNCTIONS:
            dtype = argument(node, 1, None)  # `tf.cast(x, x_dtype)`, `lax.convert_element_type(x, d)`
        if dtype is None:
            return
        if is_float32(dtype, self.ctx):
            # float32 logits, losses and labels feed the loss: deliberate precision. NumPy
            # arrays and exported values live on the host. Integers and booleans made
            # into floats override no input's dtype.
            receiver = node.func.value if name in TYPE_CAST_METHODS else None  # type: ignore[union-attr]
            if receiver is not None and modules(self.ctx, self.options).reason(receiver):
                return  # a whole module's cast (DTL303 judges those), not an activation's
            if not (mentions_loss_side(node, self.ctx) or is_numpy_call(node, self.ctx) or _torch_scalar(node, self.ctx)
                    or (receiver is not None and not_float_value(receiver, self.ctx))
                    or id(node) in self._exported or self._host_side(node, name, dtype)):
                pinned.append(dtype)
        elif dtype_name(dtype, self.ctx) in LOW_PRECISION:
            casts_back.append(node)  # a cast back, unless only one low dtype gets it (leave_FunctionDef)
        elif follows_a_dtype(dtype, self.ctx):
            casts_back[0] = True

_INIT_METHODS = ("__init__", "setup")


def _inside(node: cst.CSTNode, block: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> bool:
    while node is not None:
        if node is block:
            return True
        node = parents.get(id(node))
    return False


def _torch_scalar(call: cst.Call, ctx) -> bool:
    """``torch.tensor(x.size(-1), dtype=torch.float)``: a 0-dim torch tensor made from a
    Python number, which by torch's promotion rules does not widen the dimensioned
    tensors it meets (unlike a JAX array, which is strongly typed)."""
    if ctx.resolve(call.func) not in ("torch.tensor", "torch.as_tensor", "torch.scalar_tensor") or not call.args:
        return False
    value = call.args[0].value
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Attribute):
        return value.value.attr.value == "shape"
    return isinstance(value, cst.Call) and method_name(value) in ("size", "numel", "dim")


# The finder's shape, checked on CPython's ast by the prefilter.
def _pinned_in_forward(index: Index, lines: Sequence[str], on_path=lambda name: True) -> bool:
    """DTL103: a forward method (``forward*``, ``__call__``, ``call``) or a function that
    may be on a layer's forward path (``on_path(name)``) with a call whose argument
    spells float32, unless it certainly casts back (then the rule reports nothing in it)."""
    for function in index(ast.FunctionDef, ast.AsyncFunctionDef):
        calls = [node for node in walk(function) if isinstance(node, ast.Call)]
        if not any(f32(lines_of(arg, lines)) for call in calls for arg in (*call.args, *call.keywords)) and not any(
                call.args and isinstance(call.func, ast.Attribute) and call.func.attr == "float32" for call in calls):
            continue
        if _casts_back(function, calls, lines):
            continue
        # The forward path only where a function pins float32 and does not cast back: the
        # layer facts cost a walk of the file.
        if forward_name(function.name) or on_path(function.name):
            return True
    return False


def _plain_attribute(u, mixed) -> bool:
    """DTL103: ``self.<attr> = <call spelling float32>`` in a class's ``__init__``/``setup``
    whose layer mixes the attribute into forward (``mixed(class, attr)``: visit_Assign's test)."""
    classes = [u.owner] if u.owner is not None else u.index(ast.ClassDef)  # nested ones too
    for cls in classes:
        for function in u.index(ast.FunctionDef):
            if function.name not in _INIT_METHODS:
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and f32(
                        lines_of(node.value, u.lines)) and any(
                        isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                        and mixed(cls.name, t.attr) for t in node.targets):
                    return True
    return False


def _casts_back(function: ast.AST, calls: list[ast.Call], lines: Sequence[str]) -> bool:
    """Whether DTL103 certainly finds this forward casting back to the input's precision:
    ``.type_as(...)``, or a dtype argument that names a dtype and cannot be float32. A
    class defined inside may have a forward of its own: then nothing is certain."""
    if any(isinstance(node, ast.ClassDef) for node in walk(function)):
        return False
    for call in calls:
        method = call.func.attr if isinstance(call.func, ast.Attribute) else None
        if method == "type_as":
            return True
        dtype = next((k.value for k in call.keywords if k.arg == "dtype"), None)
        if dtype is None and method in TYPE_CAST_METHODS and call.args and not isinstance(call.args[0], ast.Starred):
            dtype = call.args[0]
        if dtype is not None and not f32(lines_of(dtype, lines)) and any(
                "dtype" in (node.id if isinstance(node, ast.Name) else node.attr).lower()
                for node in ast.walk(dtype) if isinstance(node, (ast.Name, ast.Attribute))):
            return True
    return False
