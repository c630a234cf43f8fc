"""Where the activations go, and what is on their side: a layer's forward methods, the
loss side (logits, losses, labels: float32 there is deliberate), loss classes and
user-facing wrappers, host-side NumPy arrays (``POLICY.md`` F1: a float32 value is a hazard
only where it meets the activations)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dtype_lint.concepts.layer_facts import layer_facts
from dtype_lint.core.deferred import cst
from dtype_lint.core.words import matches_any
from dtype_lint.frameworks.bases import LOSS_CLASSES

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.options import Options

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
    return not layer_facts(ctx, options).imports_any(NUMPY_DTYPE_FRAMEWORKS)


def host_side_dtype(dtype: cst.BaseExpression, ctx: FileContext, options: Options) -> bool:
    """A NumPy dtype (``np.float32``) where no framework takes one as a compute dtype
    (torch code): what it types is a NumPy array, host-side data."""
    return (ctx.resolve(dtype) or "").startswith("numpy.") and numpy_dtypes_on_host(ctx, options)
