"""DTL103: float32 pinned inside a layer's forward/__call__ with no cast back."""

from __future__ import annotations

import ast
from typing import Sequence

from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import LOW_PRECISION, dtype_name, is_float32, is_numpy_call
from dtype_lint.core.flow.float32 import not_float_value
from dtype_lint.core.layers import facts as layer_facts
from dtype_lint.core.layers import forward_name, key_of
from dtype_lint.core.roles import roles
from dtype_lint.core.shapes import Index, Prefilter, f32, lines_of, may_call, walk
from dtype_lint.core.traversal import parents as parents_of
from dtype_lint.frameworks.casts import TYPE_CAST_METHODS
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options
from dtype_lint.rules.patterns import (
    STATE_UPDATES,
    STORAGE_CALLS,
    argument,
    deliberate_float32,
    follows_a_dtype,
    in_loss_or_entry_class,
    is_layer_forward,
    mentions_loss_side,
    method_name,
    numpy_dtypes_on_host,
    positional_dtype,
)

# Methods that take a tensor off the device: a float32 cast right before them exports.
_EXPORTS = frozenset({"numpy", "tolist", "item"})


class Float32InForward(Rule):
    doc = RuleDoc(
        code="DTL103",
        name="float32-in-forward",
        summary="float32 pinned inside forward/__call__",
        what_it_does="""
            Checks the forward path of layers (see below) for
            tensors created or cast with a hardcoded float32 dtype
            (`torch.zeros(n, dtype=torch.float32)`, `x.to(torch.float32)`,
            `x.astype(jnp.float32)`) when nothing in the method casts back to an input's
            dtype, a configured dtype or a low-precision dtype. Not reported: the loss
            side (logits, losses and labels in float32, and loss classes), NumPy arrays
            (`np.array(lens, dtype=np.float32)`: host-side bookkeeping), casts right
            before `.numpy()`/`.tolist()`/`.item()`, and the `__call__` of a user-facing
            wrapper (`entry-point-classes`), which converts the user's inputs.

            Layers and their forward path come from `dtype_lint.core.layers`, by
            structure rather than by framework: a class deriving from a torch, Lightning,
            Flax, Haiku, Keras, Equinox, Objax or Trax-style layer (a base named
            `*Module`/`*Layer`/`*Block`/`*Model`/`*Cell`, or a framework layer class such as
            `nn.LayerNorm`), a class whose forward (`forward`, `forward_*`, `__call__`,
            Keras' `call`) computes with parameters (`self.param`, `get_parameter`,
            `self.weights`...) or calls sub-layers, and subclasses of those in the file.
            The path is their forward methods plus the functions and methods of the file
            that they call, transitively, and those called by lambdas a layer stores on
            itself; a call whose result the caller casts back (`f(x).to(x.dtype)`, a name
            later cast, a name handed, as it is or moved to a device, to a function of the
            file that casts back or to a sub-layer whose class's forward in the file
            does, or a name whose value flows into one of those before it is cast) is
            not followed. Also not reported: dtypes in the arguments of parameter and
            state creation (`self.variable(..., lambda s: jnp.zeros(s, jnp.float32))`),
            NumPy arrays on the host (`x.cpu().numpy().astype(np.float32)`, and in torch
            code `.astype` or a NumPy dtype), values stored into a cache or recurrent
            state (`cache.update(...)`), casts of values with no floating dtype (a
            comparison, an inverted mask, an integer `arange`), and a float32 value that,
            within the function and without being applied to a sub-layer there (an
            attribute of `self` built from a layer), flows into a sin/cos/exp table, into
            integers (`.long()`, `bucketize`), or into a name or call that says what it
            is: logits, losses and labels, a router's (`router_logits`: MoE routing is
            float32 on purpose and cast back where experts are combined), a rotary or
            frequency table (`freqs`, `build_rotary_...`, or a function named so). Such
            values are handed on, to be cast where they are applied: a table passed to a
            layer beside its input (`block(h, rotary_emb=table)`, `checkpoint(block, h,
            table)`: a called object that is not a function or method of the file) is the
            layer's to apply, and what the layer returns follows its own input. Nor is a 0-dim torch
            tensor made from a Python number (`torch.tensor(x.size(-1), dtype=...)`),
            which torch's promotion rules keep from widening other tensors. A cast
            back may name the input's dtype through a variable (`kept = x.dtype` ...
            `.to(kept)`). Array constructors with a positional dtype
            (`jnp.asarray(w, jnp.float32)`) count, and so do strongly typed float32
            scalars in JAX code (`jnp.float32(r_max)`, and `np.float32(eps)` outside a
            torch module): unlike a Python float, they promote the bf16/fp16 arrays they
            meet (torch treats a NumPy scalar like a Python number). A layer's `__init__`
            or `setup` that keeps a float32 tensor as a plain attribute (`self.mean =
            torch.tensor(m, dtype=torch.float32)`: not a parameter or buffer, so
            `model.half()`, `.to(dtype)` and dtype policies leave it float32) is reported
            there when its forward path puts the attribute into arithmetic as it is or
            only moved to a device (`self.mean.to(x.device)`), and no method casts it.
            A cast back to a literal low dtype under a test for that dtype alone (`if
            self.weight.dtype == torch.float16: h = h.to(torch.float16)`) brings back
            only float16 inputs: it silences the pins under the same test, but a pin
            before it is reported (a bfloat16 model leaves the layer in float32) unless
            such tests cover float16 and bfloat16 together.

            Also not reported (facts shared with the other float32 rules): quantised code (a
            function or class using `uint8`/`int8`/`float8_*` storage or calls that
            quantise: scales, lookup tables and biases that low-bit kernels take in
            float32), a bit reinterpretation (`w.view(dtype=torch.float32)`), a
            value stored as a parameter or buffer, a cast whose receiver is a whole
            module (`core.roles` says so, or the result is unused:
            `self.vae.to(torch.float32)` casts in place, which only a module does;
            DTL303 judges module casts), code in a class named for a rotary or
            frequency table, a float32 value handed to a function or method of the
            file that casts its result back, or to a table builder (`self.rope(...,
            dtype=torch.float32)`), and test code. A value counts as cast back when
            a name holding it appears anywhere in the receiver of a cast back (`(x +
            table).to(x.dtype)`, `grid_sample(t, grid).to(x.dtype)`), also past
            method calls on a helper's result (`helper(c).flip(-1)`).
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
            mentions `dtype` (`.to(x.dtype)`, `.astype(self.dtype)`, `type_as`) or names
            float16/bfloat16, or by a helper the value is handed to that casts back (any
            cast back in it counts): a function of this file or, through the project
            model, of another, or a sub-layer whose class's `forward` casts back (a norm
            that computes in float32 and returns the input's dtype), in this file or
            another, its own or inherited from a base in another file; one cast back
            anywhere in the method
            silences every pin in it. Quantised code is known by low-bit dtypes and
            `quantiz*` names in its function or class, so a quantised module in a file of
            its own whose class shows neither is reported. The loss side
            is recognised by name (`logits`, `loss`, `labels`, classes named `*Loss*`);
            a loss computed in a model's forward under other names is reported. Other
            methods are DTL104's, which sees only pins tied to an input. The forward path
            stops at the file's edge: a helper imported from another module is asked only
            whether it casts back, and a table cast back only by a caller in another file is
            reported where it is applied in this one (or not at all when it is handed
            on). A float32 attribute stored in `__init__` is seen only where the class
            (or its in-file family) reads it in forward arithmetic itself, directly or
            through a local name; a function handed to a functional layer combinator
            (`Fn("name", f)`) is not seen. Routers, rotary tables and logits are recognised partly by name
            (`router`, `rope`/`rotary`/`freq`, `logit`/`loss`/`label`); a computation
            named so is not reported even where it is applied to activations outside a
            sub-layer call. A module that a model of the same file keeps in float32 by
            name (`_keep_in_fp32_modules`), and the modules it holds, are not reported:
            their weights are float32 too; a model in another file that lists it is not
            seen.
            """,
    )
    reports_in_tests = False  # a test's float32 is the test's choice
    message = (
        "float32 pinned in {method}: everything after it runs in float32 whatever the "
        "input dtype; use the input's dtype (x.dtype) or the layer's configured dtype"
    )
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        def on_path(u, name: str) -> bool:
            # Whether a function of the file may be on a layer's forward path (core.layers),
            # which follows calls by name and through `self`: the text may call it (a cheap
            # superset), and then the layer facts say so.
            return not u.file_text or (may_call(u.file_text, name, called=True) and name in layer_facts(
                u.file_text, options, u.file_tree).helper_names)

        def mixed(u, cls: str, attr: str) -> bool:
            # The layer facts cost a walk of the file: only for an attribute read elsewhere.
            return u.file_text.count(f"self.{attr}") > 1 and layer_facts(
                u.file_text, options, u.file_tree).mixed_in_forward(cls, attr)

        return Prefilter(
            lambda t, lc, u: f32(t) and (u is None or _pinned_in_forward(u.index, u.lines,
                                                                         lambda name: on_path(u, name))
                                         or _plain_attribute(u, lambda cls, attr: mixed(u, cls, attr))),
            import_words=("float", "half", "double", "single", "bfloat16", "dtype"))

    valid = (
        "class L(nn.Module):\n    def forward(self, x):\n        return x.to(x.dtype)",
        "class L(nn.Module):\n    def forward(self, x):\n"
        "        y = x.to(torch.float32).softmax(-1)\n        return y.to(x.dtype)",
        "class L(nn.Module):\n    def setup(self):\n        self.w = torch.zeros(3, dtype=torch.float32)",
        "class L(nn.Module):\n    def __init__(self, m):\n        super().__init__()\n"
        "        self.m = torch.tensor(m, dtype=torch.float32)\n\n"
        "    def forward(self, x):\n        return x - self.m.to(x.dtype)",
        "def forward(x):\n    return x.to(torch.float32)",
        "class L(nn.Module):\n    def forward(self, x):\n        assert x.dtype == torch.float32\n        return x",
        "class L(nn.Module):\n    def forward(self, x):\n"
        "        w = torch.softmax(x, -1, dtype=torch.float32).to(torch.float16)\n        return w",
        "import jax.numpy as jnp\nclass Head(nn.Module):\n    def __call__(self, h):\n"
        "        logits = self.proj(h)\n        return logits.astype(jnp.float32)",
        "import numpy as np\nclass Enc(nn.Module):\n    def forward(self, x, lens):\n"
        "        lens = np.array(lens, dtype=np.float32)\n        return self.rnn(x), lens",
        "class CTCHead(nn.Module):\n    def forward(self, logits):\n"
        "        return nn.functional.log_softmax(logits, dim=-1, dtype=torch.float32)",
        "class BoxLoss(nn.Module):\n    def forward(self, outputs, n):\n"
        "        return torch.as_tensor([n], dtype=torch.float, device=outputs.device)",
        "class Retriever(nn.Module):\n    def forward(self, h):\n"
        "        return self.index(h.detach().to(torch.float32).numpy())",
    )
    invalid = (
        Invalid("class L(nn.Module):\n    def forward(self, x):\n"
                "        return x + torch.zeros(3, dtype=torch.float32)"),
        Invalid("import jax.numpy as jnp\nclass L(nn.Module):\n    def __call__(self, x):\n"
                "        return x.astype(jnp.float32) * 2"),
        Invalid("class Enc(nn.Module):\n    def forward_points(self, pts):\n"
                "        return self.embed(pts.to(torch.float32))"),
        Invalid("import jax.numpy as jnp\nclass Radial(nn.Module):\n    def __call__(self, r):\n"
                "        return self.mlp(r / jnp.float32(self.r_max))"),
        Invalid("class Norm(nn.Module):\n    def __init__(self, m):\n        super().__init__()\n"
                "        self.m = torch.tensor(m, dtype=torch.float32)\n\n"
                "    def forward(self, x):\n        return x - self.m.to(x.device)"),
    )

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
            self._torch_only = self.ctx.layers(self.options).imports_any(frozenset({"torch"})) and (
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
        return qualified == "numpy.float32" and not (cls and "torch_module" in cls.kinds) and self.ctx.layers(
            self.options).imports_any(frozenset({"jax", "flax"}))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if in_loss_or_entry_class(self.ctx, self.options):
            return
        if is_layer_forward(self.ctx, node.name.value) or self.ctx.layers(self.options).on_forward_path(
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
                if not deliberate_float32(pin, node, parents, self.ctx, self.options):
                    self.report(pin, self.message.format(method=node.name.value))

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
        where forward mixes it into the activations (``core.layers.mixed_in_forward``)."""
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
        facts = self.ctx.layers(self.options)
        if facts.quantised(key_of(self.ctx)):
            return
        for attr in attrs:
            if facts.mixed_in_forward(cls.name, attr):
                self.report(dtype, self.message.format(
                    method=f"{function.name} on a plain attribute (self.{attr}) that forward mixes into the "
                           "activations; module casts and dtype policies reach parameters and buffers, not it"))
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
        if dtype is None:
            return
        if is_float32(dtype, self.ctx):
            # float32 logits, losses and labels feed the loss: deliberate precision. NumPy
            # arrays and exported values live on the host. Integers and booleans made
            # into floats override no input's dtype.
            receiver = node.func.value if name in TYPE_CAST_METHODS else None  # type: ignore[union-attr]
            if receiver is not None and roles(self.ctx, self.options).module_reason(receiver):
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


# The rule's shape, checked on CPython's ast by the prefilter (see its Prefilter).
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
