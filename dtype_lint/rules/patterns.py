"""Small predicates over LibCST nodes that several rules share."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import dtype_name
from dtype_lint.core.flow.engine import FileFlow
from dtype_lint.core.flow.float32 import CAST_BACK, INTEGER_RESULTS, other_dtype
from dtype_lint.core.flow.modules import ModulesConfig
from dtype_lint.core.layers import key_of
from dtype_lint.core.roles import matches_any
from dtype_lint.core.traversal import descendants
from dtype_lint.frameworks.bases import LOSS_CLASSES
from dtype_lint.frameworks.casts import CAST_METHODS, TYPE_CAST_METHODS
from dtype_lint.rules.options import CAST_HELPER_PATTERNS, Options

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext

# Names of values on the loss side, where float32 is deliberate (logits for the loss,
# the loss, its labels and masks).
LOSS_SIDE_WORDS = ("logit", "loss", "label")
FORWARD_NAMES = frozenset({"forward", "__call__"})
# Calls that create parameters, state or buffers: a dtype in their arguments is a storage
# dtype (`self.variable("stats", "mean", lambda s: jnp.zeros(s, jnp.float32), shape)`).
STORAGE_CALLS = frozenset({"param", "variable", "get_parameter", "get_state", "add_weight", "add_variable",
                           "create_parameter", "Parameter", "register_parameter", "register_buffer"})
# Calls that store a value into a cache or recurrent state (`cache.update(...)`,
# `cache.update_recurrent_state(...)`): the state's precision is the storage's choice.
STATE_UPDATES = ("update", "store_", "write_")
# Names that say a value routes tokens to experts: a router's float32 is deliberate (its
# outputs are cast back where the experts' outputs are combined).
ROUTER_WORDS = ("router", "routing")
# Names that say a value is a rotary/frequency table (or a call builds one): such tables are
# built in float32 on purpose and cast where they are applied to activations.
TABLE_WORDS = ("rope", "rotary", "freq")


def argument(call: cst.Call, position: int | None, keyword: str | None) -> cst.BaseExpression | None:
    """The expression passed as ``keyword=`` or at ``position`` (when no star-args precede it)."""
    positional = 0
    found = None
    for arg in call.args:
        if arg.keyword is not None:
            if keyword is not None and arg.keyword.value == keyword:
                return arg.value
        elif arg.star:
            positional = -1_000_000  # positions after *args are unknown
        else:
            if position is not None and positional == position:
                found = arg.value
            positional += 1
    return found


# Array constructors that take a dtype positionally (`jnp.asarray(x, jnp.float32)`,
# `jnp.zeros(shape, dtype)`, `jax.random.normal(key, shape, dtype)`).
ARRAY_CREATORS = frozenset({"array", "asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "eye",
                            "tensor", "as_tensor", "normal", "uniform", "zeros_like", "ones_like", "full_like",
                            "empty_like"})


def positional_dtype(call: cst.Call, ctx: FileContext) -> cst.BaseExpression | None:
    """For an array constructor, a positional argument after the first that names a
    dtype (a spelled one, or one whose text mentions ``dtype``)."""
    if callee_name(call) not in ARRAY_CREATORS:
        return None
    for arg in call.args[1:]:
        if arg.keyword is not None or arg.star:
            break
        if dtype_name(arg.value, ctx) or "dtype" in ctx.module.code_for_node(arg.value).lower():
            return arg.value
    return None


def follows_a_dtype(node: cst.BaseExpression, ctx: FileContext) -> bool:
    """A dtype argument that follows something: its text mentions ``dtype``
    (``x.dtype``, ``self.dtype``), or it is a name bound to such a value
    (``orig_type = x.dtype`` ... ``.to(orig_type)``)."""
    if "dtype" in ctx.module.code_for_node(node).lower():
        return True
    flow = FileFlow.of(ctx)
    return isinstance(node, cst.Name) and any(other_dtype(value, flow) for value in flow.values(node, CAST_BACK))


def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def callee_name(call: cst.Call) -> str | None:
    """The callee's last name (``f`` of ``a.b.f(...)`` and of ``f(...)``), else None."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None


def method_name(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def names_dtype(node: cst.BaseExpression, ctx: FileContext) -> bool:
    """True when the expression is, or evidently computes, a dtype (not a device)."""
    if dtype_name(node, ctx):
        return True
    if isinstance(node, cst.Call) and ctx.resolve(node.func) == "getattr" and node.args:
        return ctx.resolve(node.args[0].value) in ("torch", "jax.numpy", "numpy")
    return "dtype" in ctx.module.code_for_node(node).lower()


def cast_target(call: cst.Call, ctx: FileContext) -> cst.BaseExpression | None:
    """For a cast call (``x.half()``, ``x.to(dtype)``, ``x.astype(d)``...), the receiver."""
    name = method_name(call)
    if name is None:
        return None
    receiver = call.func.value  # type: ignore[union-attr]
    if name in CAST_METHODS and not call.args:
        return receiver
    if name in TYPE_CAST_METHODS:
        dtype = argument(call, 0, "dtype")
        if name == "to" and dtype is None:
            dtype = argument(call, 1, None)  # .to(device, dtype)
        if dtype is not None and names_dtype(dtype, ctx):
            return receiver
    return None


_METHOD_DTYPES = {"half": "float16", "bfloat16": "bfloat16", "double": "float64", "float": "float32"}


def cast_dtype_name(call: cst.Call, ctx: FileContext) -> str | None:
    """For a cast call, the canonical dtype it casts to, when it is spelled out."""
    name = method_name(call)
    if name in _METHOD_DTYPES and not call.args:
        return _METHOD_DTYPES[name]
    if name in TYPE_CAST_METHODS:
        dtype = argument(call, 0, "dtype")
        if name == "to" and (dtype is None or not names_dtype(dtype, ctx)):
            dtype = argument(call, 1, None)
        return dtype_name(dtype, ctx) if dtype is not None else None
    return None


def casting_helper(name: str) -> bool:
    """A function named as an explicit casting helper (``cast_params``, ``to_bf16``), whose
    body is the casting API: not reported there, but where it is called."""
    from dtype_lint.core.roles import CASTING_FUNCTION_WORDS, words_of

    return bool(words_of(name) & CASTING_FUNCTION_WORDS) or any(
        fnmatch.fnmatchcase(name.lower(), pattern) for pattern in CAST_HELPER_PATTERNS) or any(
        word in name.lower() for word in ("half", "fp16", "bf16", "float16", "bfloat16"))


def in_cast_helper(ctx: FileContext) -> bool:
    """Inside the body of an explicit casting API, where casting is what was asked for."""
    return any(
        isinstance(scope.node, cst.FunctionDef)
        and any(fnmatch.fnmatchcase(scope.name.lower(), pat) for pat in CAST_HELPER_PATTERNS)
        for scope in ctx.scopes
    )


def is_layer_forward(ctx: FileContext, name: str) -> bool:
    """Whether ``name`` is a forward method (``forward``, ``forward_*``, ``__call__``) of
    the layer class whose body we are directly in."""
    if name not in FORWARD_NAMES and not name.startswith("forward"):
        return False
    cls = ctx.method_class()
    if cls is None:
        return False
    if cls.kinds & {"torch_module", "flax_module"}:
        return True
    # A class deriving from some other layer we cannot resolve.
    return any(b.endswith(("Module", "Layer", "Block", "Model")) for b in cls.bases)


def in_loss_or_entry_class(ctx: FileContext, options: Options) -> bool:
    """In a method of a loss class, or of a user-facing wrapper (``entry-point-classes``,
    not its subclasses, which are models) whose ``__call__`` converts the user's inputs."""
    cls = ctx.method_class()
    if cls is None:
        return False
    if matches_any(cls.name, options.entry_point_classes):
        return True
    return any(matches_any(name.rsplit(".", 1)[-1], LOSS_CLASSES) for name in (cls.name, *cls.bases))


def in_inference_function(ctx: FileContext, options: Options) -> bool:
    """Inside a function that only runs a model for inference or evaluation."""
    return any(
        isinstance(scope.node, cst.FunctionDef) and matches_any(scope.name.lower(), options.inference_functions)
        for scope in ctx.scopes
    )


def mentions_loss_side(node: cst.CSTNode, ctx: FileContext) -> bool:
    text = ctx.module.code_for_node(node).lower()
    return any(word in text for word in LOSS_SIDE_WORDS)


# Frameworks whose arrays take NumPy dtypes as their compute dtype (`jnp.zeros(n, np.float32)`).
NUMPY_DTYPE_FRAMEWORKS = frozenset({"jax", "flax", "trax", "haiku", "tensorflow", "objax", "equinox", "keras", "mlx"})


def numpy_dtypes_on_host(ctx: FileContext, options: Options) -> bool:
    """Whether a NumPy dtype in this file can only be a NumPy array's, which lives on the
    host: the whole file imports no framework whose arrays take NumPy dtypes (torch's
    tensors do not)."""
    return not ctx.layers(options).imports_any(NUMPY_DTYPE_FRAMEWORKS)


def host_side_dtype(dtype: cst.BaseExpression, ctx: FileContext, options: Options) -> bool:
    """A NumPy dtype (``np.float32``) where no framework takes one as a compute dtype
    (torch code): what it types is a NumPy array, host-side data."""
    return (ctx.resolve(dtype) or "").startswith("numpy.") and numpy_dtypes_on_host(ctx, options)


def module_kind(expr: cst.BaseExpression, ctx: FileContext, options: Options) -> str | None:
    """Why ``expr`` is known to be a torch module, or None.

    Known: ``self`` in a module's method, a constructor call of a module class, a name
    bound to one or annotated as one, or a name configured in ``module-names``: the
    flow engine with the modules configuration, constructions only (no factories,
    copies or moves).
    """
    config = ModulesConfig(named=lambda node: _named_by_option(node, options), factories=False)
    for source in FileFlow.of(ctx).sources(expr, config):
        return source.kind
    return None


def _named_by_option(expr: cst.BaseExpression, options: Options) -> str | None:
    """A name, or ``self.<name>``, that ``module-names`` matches."""
    if isinstance(expr, cst.Name):
        return f"'{expr.value}' names a model" if matches_any(expr.value, options.module_names) else None
    if (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"
            and matches_any(expr.attr.value, options.module_names)):
        return f"'self.{expr.attr.value}' names a model"
    return None


# Functions whose result is a table of phases or frequencies: what feeds them is computed
# in float32 on purpose (sin/cos of large positions lose everything in half precision).
_TABLE_FUNCTIONS = frozenset({"exp", "sin", "cos", "polar", "exp2", "sincos"})


def _elsewhere_casts_back(func: cst.BaseExpression, ctx: FileContext) -> bool:
    """A function imported from another file whose body casts back (the project model)."""
    from dtype_lint.core.model.summary import FunctionSummary

    written = ctx.module.code_for_node(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    if ctx.view is None or not written:
        return False
    qualified = _whole_file_name(written, ctx)
    if "." not in qualified:
        return False
    found = ctx.view.resolve(qualified)
    return found is not None and isinstance(found.node, FunctionSummary) and ctx.view.casts_back(found)


def _whole_file_name(written: str, ctx: FileContext) -> str:
    """A dotted name as the file writes it, its head written out through the whole file's
    imports (the project model's summary of the text: the prefilter may have left the
    import out of what LibCST parsed)."""
    from dtype_lint.core.model.project import qualify

    return qualify(ctx.view.own(ctx.source or ctx.module.code, ctx.file_tree()), written) if ctx.view else written


def _layer_object(func: cst.BaseExpression, facts, cls: str | None, ctx: FileContext) -> bool:
    """Whether a callee is an object called, a layer as far as the file shows (``block``
    in ``for block in self.blocks``, ``self.attn``), not a function of the file, a method
    of the class or an imported function."""
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        return not facts.has_method(cls, func.attr.value)
    if isinstance(func, cst.Name):
        return func.value not in facts.top_functions and ctx.resolve(func) == func.value
    return False


def _sublayer_casts_back(constructors: list[str], facts, ctx: FileContext) -> bool:
    """Whether every layer class stored in a ``self.<name>`` casts its result back in its
    forward: a class of this file by the layer facts, one of another by the project
    model's reading of its file."""
    from dtype_lint.core.model.summary import ClassSummary

    if not constructors:
        return False
    for written in constructors:
        head, dot, rest = written.partition(".")
        if not dot and head in facts.classes:
            if facts.has_method(head, "forward") or facts.has_method(head, "__call__"):
                if not (facts.callee_casts_back(head, "forward") or facts.callee_casts_back(head, "__call__")):
                    return False
                continue
            # no forward in the file: the one it inherits from a class of another file
            found = ctx.view.local(ctx.source or ctx.module.code, head, ctx.file_tree()) if ctx.view else None
            if found is None or not ctx.view.casts_back(found):
                return False
            continue
        qualified = _whole_file_name(written, ctx)
        found = ctx.view.resolve(qualified) if ctx.view is not None and "." in qualified else None
        if found is None or not isinstance(found.node, ClassSummary) or not ctx.view.casts_back(found):
            return False
    return True


def deliberate_float32(pin: cst.CSTNode, function: cst.FunctionDef, parents: dict[int, cst.CSTNode],
                       ctx: FileContext, options: Options) -> bool:
    """Whether the float32 value the pin makes is deliberate: the function is quantised
    code (``core.layers``), the value is stored as a parameter or buffer, the cast's
    result is unused (``self.vae.to(torch.float32)``: only a module casts in place), or
    by where the value flows within the
    function (directly, or through the names it is assigned to): into a sin/cos/exp
    table, into integers (``.long()``, ``bucketize``: coordinates made into indices),
    into a function of this file that casts its result back, or into logits (a name
    saying so: a router's or a loss's), and not applied to a sub-layer
    (``self.proj(table)``) there. A function or class named for a rotary or frequency
    table builds one. Such a value is handed on, to be cast where
    it is applied, and so is a table handed to a layer beside its input
    (``block(h, rotary_emb=table)``). Nor in a module the file's model keeps in float32
    by name (``_keep_in_fp32_modules``): its weights are float32 too, nor in a private
    helper whose every caller casts its result back."""
    facts = ctx.layers(options)
    cls = ctx.classes[-1].name if ctx.classes else None
    if any(word in name.lower() for name in (function.name.value, cls or "") for word in TABLE_WORDS):
        return True  # the function or its class says it builds a rotary or frequency table
    if facts.quantised(key_of(ctx)):
        return True  # a low-bit format's scales, tables or dequantised values
    if facts.kept_float32(cls):
        return True  # the model keeps this module in float32 (`_keep_in_fp32_modules`)
    if facts.results_cast_back(key_of(ctx)):
        return True  # a private helper whose every caller casts its result back
    node = parents.get(id(pin))
    while node is not None and not isinstance(node, cst.BaseStatement):
        if isinstance(node, cst.Call):
            name = callee_name(node)
            if name in STORAGE_CALLS:
                return True  # a parameter's or buffer's storage dtype
            if name in TYPE_CAST_METHODS and isinstance(parents.get(id(node)), cst.Expr):
                return True  # result unused: an in-place cast, which only a module has
        node = parents.get(id(node))
    starts, seen, deliberate = [pin], set(), False
    body_names: list[cst.Name] | None = None  # the function's names, read once
    for _ in range(8):
        names: set[str] = set()
        for start in starts:
            node, child = parents.get(id(start)), start
            while node is not None and not isinstance(node, cst.BaseStatement):
                if isinstance(node, cst.Call):
                    func = node.func
                    name = callee_name(node)
                    if name in INTEGER_RESULTS:
                        deliberate = True
                        break  # integers from here on: nothing float32 flows further
                    table = name is not None and any(word in name.lower() for word in TABLE_WORDS)
                    deliberate = deliberate or name in _TABLE_FUNCTIONS or table
                    if table:
                        node, child = parents.get(id(node)), node
                        continue  # a table builder (`self.rope(..., dtype=float32)`), not a layer applied
                    if (deliberate and isinstance(child, cst.Arg) and child is not node.args[0]
                            and _layer_object(func, facts, cls, ctx)):
                        # a table handed to a layer beside its input (`block(h, rotary_emb=table)`,
                        # `checkpoint(block, h, table)`): the layer applies it where it casts
                        # it; its result follows its own input and weights
                        break
                    if child is not func and name is not None and facts.callee_casts_back(
                            cls if isinstance(func, cst.Attribute) else None, name):
                        return True  # handed to a function of this file that casts back
                    if child is not func and _elsewhere_casts_back(func, ctx):
                        return True  # handed to a function of another file that casts back
                    if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                            and func.value.value == "self" and child is not func and facts.is_sublayer(cls, name)):
                        # applied to a sub-layer here: in the layer's dtype, unless the
                        # sub-layer's forward casts its result back (a norm computing in
                        # float32 and returning the input's dtype)
                        return _sublayer_casts_back(facts.stored_constructors(cls, name), facts, ctx)
                    if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                            and func.value.value == "self" and child is not func and _sublayer_casts_back(
                                facts.stored_constructors(cls, name, layers_only=False), facts, ctx)):
                        return True  # a layer of another file whose forward casts back
                    if (isinstance(func, cst.Call) and child is not func
                            and facts.layer_constructor_name(ctx.resolve(func.func))):
                        return False  # applied to a layer made in place (`nn.Dense(8)(x)`)
                if isinstance(node, cst.Assign):
                    targets = {n.value for t in node.targets for n in names_in(t.target)}
                    deliberate = deliberate or any(word in t.lower() for t in targets
                                                   for word in LOSS_SIDE_WORDS + ROUTER_WORDS + TABLE_WORDS)
                    names |= targets
                    break
                node, child = parents.get(id(node)), node
        names -= seen
        if not names:
            break
        seen |= names
        body_names = names_in(function.body) if body_names is None else body_names
        starts = [n for n in body_names if n.value in names and _read(n, parents)]
    return deliberate


def names_in(root: cst.CSTNode) -> list[cst.Name]:
    return [node for node in descendants(root) if isinstance(node, cst.Name)]


def _read(name: cst.Name, parents: dict[int, cst.CSTNode]) -> bool:
    """Whether the name is read (not bound by an assignment target, nor an attribute's
    or keyword's name)."""
    parent = parents.get(id(name))
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return False
    node = parent
    while node is not None and not isinstance(node, cst.BaseStatement):
        if isinstance(node, (cst.AssignTarget, cst.CompFor)):
            return False
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.Call)):
            return True
        node = parents.get(id(node))
    return True
