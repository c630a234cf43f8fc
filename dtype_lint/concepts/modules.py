"""What is a module (a layer, a model): the receiver of a whole-model cast, the owner
that is pickled whole.

Answered from what a file says rather than from lists of names. A module is what the
file builds with a module class (``torch.nn`` or a class deriving from one), ``self`` in
a module's method, a parameter annotated as one, a class imported from a package of
models or layers (``mypkg.models.ResNet``), a value bound from one of those or from a
factory or loader named for a model (``build_model(...)``, ``from_pretrained(...)``), a
copy of a module (``deepcopy(model)``, the usual EMA copy), or a name on which the file
calls what only modules have (``.parameters()``, ``.state_dict()``, ``.eval()``,
``.train()``, ``.named_modules()``..., or which it wraps in ``DistributedDataParallel``):
that is how a loss or criterion attribute is known to be a module. A receiver only
*named* like a model (``module-names``) is taken to be one unless the file says it is a
tensor or a batch: tensor words in its name (``model_inputs``, ``model_output``),
tensor-only methods used on it (``.shape``, ``.view()``...), or a value computed from
tensors.

Bindings, copies and device moves are followed by the flow engine with
:class:`ModulesConfig` in the *ordered* reading (the binding in force where the rule
stands), at most four steps; the name conventions are its ``named`` hook.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Iterable

from dtype_lint.core.deferred import cst
from dtype_lint.core.flow.engine import Carry, FileFlow, FlowConfig, Source
from dtype_lint.core.flow.scopes import FScope
from dtype_lint.core.shapes import Index, last_name
from dtype_lint.core.words import matches_any, words_of

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.options import Options

# What only modules have (tensors have none of these).
MODULE_METHODS = frozenset({
    "parameters", "named_parameters", "buffers", "named_buffers", "state_dict", "load_state_dict",
    "eval", "train", "modules", "named_modules", "children", "named_children", "register_buffer",
    "register_parameter", "register_forward_hook", "register_forward_pre_hook", "register_module",
    "add_module", "get_submodule", "zero_grad",
})
# Wrappers whose first argument is a module.
MODULE_WRAPPERS = frozenset({"DistributedDataParallel", "DataParallel", "FullyShardedDataParallel", "DDP", "FSDP",
                             "compile"})
# What only tensors (and arrays) have.
TENSOR_METHODS = frozenset({
    "size", "dim", "numel", "view", "reshape", "unsqueeze", "squeeze", "expand", "expand_as", "permute",
    "transpose", "contiguous", "item", "tolist", "numpy", "detach", "clone", "masked_fill", "flatten", "repeat",
    "chunk", "softmax", "sum", "mean", "argmax", "narrow", "index_select", "gather", "type_as", "view_as",
})
TENSOR_ATTRIBUTES = frozenset({"shape", "ndim", "is_floating_point", "grad_fn", "T"})
# Words of a name that hold data rather than a model (`model_inputs`, `model_output`).
TENSOR_WORDS = frozenset({
    "input", "inputs", "output", "outputs", "batch", "batches", "logit", "logits", "kwargs", "args", "ids",
    "mask", "masks", "feature", "features", "hidden", "tensor", "tensors", "sample", "samples", "image",
    "images", "pixel", "values", "embeds", "latents", "latent", "noise", "pred", "preds", "prediction",
    "predictions", "target", "targets", "grad", "grads", "gradients", "data", "x", "y", "out",
    "scores", "probs", "states", "cache", "buffer",
})
# Words of a factory or loader's name that say it returns a model.
_FACTORY_WORDS = frozenset({"model", "models", "network", "net", "criterion", "module"})
_FACTORY_NAMES = frozenset({"from_pretrained", "from_config", "from_single_file", "deepcopy"})
# Calls that keep the object they are called on (device and mode moves).
DEVICE_MOVES = frozenset({"cuda", "cpu", "to", "eval", "train", "requires_grad_"})
# Words of a package path that holds models or layers (`mypkg.models.ResNet`,
# `torchvision.models.resnet50`).
_MODELS_PACKAGE_WORDS = frozenset({"model", "models", "modeling", "modelling", "modules", "networks", "nets",
                                   "nn", "layers", "architectures", "backbones"})


def key_of(name: str) -> str:
    """How a receiver is keyed across a file: its last name, without leading underscores
    (`self._criterion` and `criterion` are the same object by convention)."""
    return name.lstrip("_")


def models_path(qualified: str) -> bool:
    """Whether a callee is a class imported from a package of models or layers (a segment
    of its dotted path, not its own name, says so) and is not named for data."""
    parts = qualified.split(".")
    if len(parts) < 2 or not parts[-1][:1].isupper() or words_of(parts[-1]) & TENSOR_WORDS:
        return False  # a class (CamelCase), not a loader whose result may be a copy
    return any(words_of(part) & _MODELS_PACKAGE_WORDS for part in parts[:-1])


def factory_name(name: str | None) -> bool:
    """Whether a callee's last name says it returns a model (`build_model`,
    `load_pretrained_model`, `from_pretrained`, `deepcopy` of one)."""
    if not name:
        return False
    if name in _FACTORY_NAMES:
        return True
    found = words_of(name)
    return bool(found & _FACTORY_WORDS) and not found & TENSOR_WORDS


# -- what the file's text says of its receivers ---------------------------------------------

# `name.parameters(`, `name.cuda().eval(`, `name.to(device).train(`: the name before a
# module method, past device moves with flat arguments; `DDP(name`, `torch.compile(self.net`.
# The receivers are searched in the reversed text, from the method's `(`: a search that
# starts with a literal skips to each one, where one that starts with a word would try
# every word of the file.
def _reversed(words: Iterable[str]) -> str:
    return "|".join(sorted(word[::-1] for word in words))


_MODULE_RECEIVER_REVERSED = re.compile(
    rf"\(\s*(?:{_reversed(MODULE_METHODS)})\s*\.(?:\s*\)[^()]*\(\s*(?:{_reversed(DEVICE_MOVES)})\s*\.)*\s*(\w+)(?!\w)")
_WRAPPED = re.compile(r"\b(?:" + "|".join(sorted(MODULE_WRAPPERS)) + r")\s*\(\s*(?:[\w.]*\.)?(\w+)")


def _module_keys(text: str) -> set[str]:
    """Keys of the receivers of module-only methods and of module wrappers, read from the
    text (a walk of the tree would cost more than the rest of the rule)."""
    keys = {key_of(m.group(1)[::-1]) for m in _MODULE_RECEIVER_REVERSED.finditer(text[::-1])}
    if any(wrapper in text for wrapper in MODULE_WRAPPERS):
        keys.update(key_of(m.group(1)) for m in _WRAPPED.finditer(text))
    return keys


@functools.lru_cache(maxsize=1)
def module_keys(text: str) -> frozenset[str]:
    """Keys of receivers the file uses as modules (kept for the last file, whose units and
    rules ask in turn); ``self`` among them where the file calls a module method on it."""
    return frozenset(_module_keys(text))


def _strip_moves(node: ast.AST) -> ast.AST:
    """`model.cuda().eval()`'s receiver `model.cuda()` is `model`."""
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
           and node.func.attr in DEVICE_MOVES):
        node = node.func.value
    return node


def _tensor_keys(index: Index, text: str) -> frozenset[str]:
    keys: set[str] = set()
    for node in index(ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in TENSOR_METHODS:
            last = last_name(_strip_moves(func.value))
            if last is not None:
                keys.add(key_of(last))
    for node in index(ast.Attribute):
        if node.attr in TENSOR_ATTRIBUTES:
            last = last_name(node.value)
            if last is not None:
                keys.add(key_of(last))
    return frozenset(keys - module_keys(text))


def tensor_keys(ctx: FileContext) -> frozenset[str]:
    """Keys of receivers the file uses as tensors (tensor-only methods and attributes),
    other than those it uses as modules."""
    return ctx.fact("tensor keys", lambda: _tensor_keys(ctx.file_index(), ctx.text))


def file_facts(tree: ast.Module, text: str, options: Options, path: str) -> tuple[frozenset[str], ...]:
    """What the module conventions read of the whole file (for incremental linting)."""
    return module_keys(text), _tensor_keys(Index(tree.body), text)


# -- the flow engine's configuration --------------------------------------------------------


def module_type(expr: cst.BaseExpression, ctx: FileContext) -> str | None:
    """Why the class (or constructor) ``expr`` names is a torch module, or None."""
    qualified = ctx.resolve(expr)
    if qualified is None:
        return None
    last = qualified.rsplit(".", 1)[-1]
    if qualified.startswith("torch.nn.") and last[:1].isupper() and not last.startswith("Parameter"):
        return f"{qualified} is a torch module"
    if "torch_module" in ctx.kinds_of(qualified):
        return f"{qualified} is a torch module"
    return None


class ModulesConfig(FlowConfig):
    """Sources: modules (see the module's docs). ``named``: what a name or attribute
    alone says (the caller's conventions), or None for nothing. ``factories=False``:
    only constructions of module classes (no models packages, factories, copies or
    moves). Read *ordered* with no other propagator by default; ``ordered=False`` and
    ``propagators`` turn on the engine's others.

    Carriers: ``deepcopy(m)``/``copy(m)`` ("a copy of a module (...)"), device and mode
    moves (``m.cuda()``, ``m.to(device)``, ``m.eval()``: the same object). Sanitizer:
    ``self`` in a class that is not a module."""

    max_depth = 4

    def __init__(self, named: Callable[[cst.BaseExpression], str | None] | None = None,
                 factories: bool = True, ordered: bool = True,
                 propagators: frozenset[str] = frozenset()) -> None:
        self._named = named
        self.factories = factories
        self.ordered = ordered
        self.propagators = propagators

    def _self_module(self, flow: FileFlow) -> bool:
        cls = flow.ctx.method_class()
        return bool(cls and "torch_module" in cls.kinds)

    def sanitizes(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> bool:
        return isinstance(expr, cst.Name) and expr.value == "self" and not self._self_module(flow)

    def source(self, flow: FileFlow, expr: cst.BaseExpression, scope: FScope | None) -> str | None:
        if isinstance(expr, cst.Name) and expr.value == "self":
            return "'self' is a module here"  # the sanitizer let it through: a module's method
        return None

    def bound(self, flow: FileFlow, value: cst.BaseExpression) -> str | None:
        return module_type(value, flow.ctx) if isinstance(value, (cst.Name, cst.Attribute)) else None

    def named(self, flow: FileFlow, expr: cst.BaseExpression) -> str | None:
        return self._named(expr) if self._named is not None else None

    def call(self, flow: FileFlow, call: cst.Call, scope: FScope | None) -> str | Source | Carry | None:
        ctx = flow.ctx
        strong = module_type(call.func, ctx)
        if strong or not self.factories:
            return strong
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if name in ("deepcopy", "copy") and call.args:
            # A copy (the usual EMA) is not the model the optimizer trains: POLICY.md counts
            # casts of copies as benign, so what rests on one is a pattern alone.
            return Carry((call.args[0].value,), "a copy of a module ({})", confidence="low")
        qualified = ctx.resolve(func)
        if qualified and models_path(qualified):
            return _convention(call, f"{qualified} comes from a package of models")
        if factory_name(name) and name != "deepcopy":
            return _convention(call, f"{name}() returns a model")
        if isinstance(func, cst.Attribute) and name in DEVICE_MOVES:
            return Carry((func.value,))
        return None


def _convention(call: cst.Call, kind: str) -> Source:
    """A module inferred from a name (a package of models, a factory named for a model):
    a convention, medium confidence."""
    return Source(call, kind, confidence="medium", basis=kind)


# -- per file ---------------------------------------------------------------------------------


def cst_dotted(node: cst.CSTNode) -> str | None:
    """``a.b.c`` of a LibCST name or attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def cst_last(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return None


class Modules:
    """One file's answers to *is this a module?* (see the module's docs)."""

    def __init__(self, ctx: FileContext, options: Options) -> None:
        self.ctx = ctx
        self.options = options
        self._config = ModulesConfig(named=self._named_module)

    def reason(self, expr: cst.BaseExpression) -> str | None:
        """Why ``expr`` is a module, or None (unknown, or a tensor or a batch): the flow
        engine with the modules configuration, which follows bindings, copies and device
        moves, and asks :meth:`_named_module` of a name whose binding says nothing."""
        found = self.evidence(expr)
        return found.kind if found is not None else None

    def evidence(self, expr: cst.BaseExpression) -> Source | None:
        """The source that makes ``expr`` a module, with its confidence (a construction or
        ``self`` in a module: high; a name's convention: medium; a copy: low)."""
        for source in FileFlow.of(self.ctx).sources(expr, self._config):
            return source
        return None

    def _named_module(self, expr: cst.BaseExpression) -> str | None:
        """What a name or attribute alone says: a module, by how the file uses the name
        or by ``module-names``; None for a tensor or a batch."""
        if isinstance(expr, cst.Name):
            name = expr.value
        elif isinstance(expr, cst.Attribute):
            name = expr.attr.value
        else:
            return None
        # Data words in the name (`x`, `model_inputs`) outweigh file-wide evidence about
        # a name that other code may reuse.
        if words_of(name) & TENSOR_WORDS:
            return None
        key = key_of(name)
        if key != "self" and key in module_keys(self.ctx.text):
            return f"'{name}' is used as a module in this file"
        if self.tensor(expr, name):
            return None
        if matches_any(name, self.options.module_names) and (
                isinstance(expr, cst.Name) or cst_dotted(expr) == f"self.{name}"):
            return f"'{name}' names a model"
        return None

    def tensor(self, expr: cst.BaseExpression, name: str | None = None) -> bool:
        """Whether the file says ``expr`` holds tensors or a batch, not a module."""
        if isinstance(expr, cst.Call):
            method = cst_last(expr.func)
            if method in TENSOR_METHODS or any(a.keyword is not None and a.keyword.value == "return_tensors"
                                               for a in expr.args):
                return True
            return isinstance(expr.func, cst.Attribute) and self.tensor(expr.func.value)
        if isinstance(expr, (cst.BinaryOperation, cst.Subscript)):
            return True
        name = name or cst_last(expr)
        if name is None:
            return False
        return bool(words_of(name) & TENSOR_WORDS) or key_of(name) in tensor_keys(self.ctx)


def modules(ctx: FileContext, options: Options) -> Modules:
    """The file's :class:`Modules`, made on first use and shared by every rule."""
    return ctx.fact(("modules", options), lambda: Modules(ctx, options))


def module_kind(expr: cst.BaseExpression, ctx: FileContext, options: Options) -> str | None:
    """Why ``expr`` is known to be a torch module by construction, or None: ``self`` in a
    module's method, a constructor call of a module class, a name bound to one or
    annotated as one, or a name configured in ``module-names`` (the modules
    configuration with constructions only: no factories, copies or moves)."""
    found = module_evidence(expr, ctx, options)
    return found.kind if found is not None else None


def module_evidence(expr: cst.BaseExpression, ctx: FileContext, options: Options) -> Source | None:
    """:func:`module_kind`'s source, with its confidence (``module-names``: medium)."""
    config = ModulesConfig(named=lambda node: _named_by_option(node, options), factories=False)
    for source in FileFlow.of(ctx).sources(expr, config):
        return source
    return None


def _named_by_option(expr: cst.BaseExpression, options: Options) -> str | None:
    """A name, or ``self.<name>``, that ``module-names`` matches."""
    if isinstance(expr, cst.Name):
        return f"'{expr.value}' names a model" if matches_any(expr.value, options.module_names) else None
    if (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"
            and matches_any(expr.attr.value, options.module_names)):
        return f"'self.{expr.attr.value}' names a model"
    return None
