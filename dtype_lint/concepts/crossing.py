"""Which objects cross a process boundary whole (``POLICY.md`` F2.4): a module (a torch
``nn.Module``, a Lightning module: the model is saved and sent whole), a dataset (a loader
with workers receives it), a Lightning data module (spawned trainers pickle it), and what
datasets hold (transforms, processors, collators and readers, ``transform-classes``).
Flax linen and Haiku modules are descriptions, and Python modules and classes are pickled
by name: nothing kept on them crosses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dtype_lint.concepts.modules import module_kind
from dtype_lint.core.deferred import cst
from dtype_lint.core.flow.engine import FileFlow
from dtype_lint.core.words import matches_any

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.options import Options

_MODULE_MAKERS = frozenset({"importlib.import_module", "types.ModuleType", "ModuleType", "sys.modules.get"})


def pickled_whole(name: str, kinds: frozenset[str], bases: tuple[str, ...], options: Options) -> str | None:
    """How an instance of the class is pickled whole, or None."""
    if kinds & {"torch_module", "dataset"}:
        return f"a {name} instance"
    # Lightning data modules go to ddp_spawn workers with the trainer.
    if any(n.endswith("DataModule") for n in (name, *bases)):
        return f"a {name} data module (spawned trainers pickle it)"
    # Datasets and loaders hold transforms, processors, collators and readers, and
    # pickle them with themselves.
    if matches_any(name, options.transform_classes):
        return f"a {name} instance (datasets hold it)"
    return None


def owner(receiver: cst.BaseExpression, ctx: FileContext, options: Options) -> str | None:
    """What ``receiver`` is, where it is pickled whole (a description for the message), or
    None: ``self`` in a class pickled whole, a model (by construction or ``module-names``)
    or anything inside one, an instance the file constructs of a class pickled whole."""
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        cls = ctx.method_class()
        return pickled_whole(cls.name, cls.kinds, cls.bases, options) if cls is not None else None
    if python_module(receiver, ctx):
        return None
    if module_kind(receiver, ctx, options):
        return "a model"
    root = _root(receiver)
    if root is not receiver and isinstance(root, cst.Name) and not python_module(root, ctx) and (
            module_kind(root, ctx, options)):
        # model.encoder.head = ...: a submodule (or any object) inside the model's
        # attributes is pickled with it
        return "a model (in one of its submodules)"
    if root is not receiver and isinstance(root, cst.Name) and root.value == "self":
        holder = owner(root, ctx, options)  # self.codec.ready = ...: likewise, inside self
        return f"{holder} (in one of its attributes)" if holder is not None else None
    # An instance the file constructs: `ds = MyDataset(...)`, `dm = cls()` in a
    # classmethod of a data module.
    constructed = constructed_class(receiver, ctx)
    if constructed is None:
        return None
    known = ctx.known_classes.get(constructed)
    if known is not None:
        return pickled_whole(known.name, known.kinds, known.bases, options)
    return pickled_whole(constructed.rsplit(".", 1)[-1], frozenset(ctx.kinds_of(constructed)), (), options)


def constructed_class(receiver: cst.BaseExpression, ctx: FileContext) -> str | None:
    """The class of the instance a name of the file is bound to (``ref = Reference()``),
    where the file resolves it."""
    if not (isinstance(receiver, cst.Name) and isinstance(ctx.lookup_binding(receiver.value), cst.Call)):
        return None
    return FileFlow.of(ctx).constructed_class(receiver)


def names_class(receiver: cst.BaseExpression) -> bool:
    """Whether the receiver is named as a class (``cls``, ``layout_cls``,
    ``experts_class``, a CapWords name) or is ``type(x)``: pickle names a class."""
    if isinstance(receiver, cst.Call):
        return isinstance(receiver.func, cst.Name) and receiver.func.value == "type"
    name = receiver.value if isinstance(receiver, cst.Name) else (
        receiver.attr.value if isinstance(receiver, cst.Attribute) else "")
    return name == "cls" or name.endswith(("_cls", "_class", "klass")) or name[:1].isupper()


def python_module(receiver: cst.BaseExpression, ctx: FileContext) -> bool:
    """A Python module, not a model: bound to ``sys.modules[...]``, ``import_module(...)``
    or ``ModuleType(...)``, or a parameter annotated ``ModuleType``."""
    if not isinstance(receiver, cst.Name):
        return False
    bound = ctx.lookup_binding(receiver.value)
    if isinstance(bound, cst.Subscript):
        return ctx.resolve(bound.value) == "sys.modules"
    if isinstance(bound, cst.Call):
        return ctx.resolve(bound.func) in _MODULE_MAKERS
    return bound is not None and (ctx.resolve(bound) or "").endswith("ModuleType")


def _root(node: cst.BaseExpression) -> cst.BaseExpression:
    """The head of an attribute chain (``model`` in ``model.encoder.head``)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node
