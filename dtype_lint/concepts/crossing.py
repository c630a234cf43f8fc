"""Which objects cross a process boundary whole (``POLICY.md`` F2.4): a module (a torch
``nn.Module``, a Lightning module: the model is saved and sent whole), a dataset (a loader
with workers receives it), a Lightning data module (spawned trainers pickle it), and what
datasets hold (transforms, processors, collators and readers, ``transform-classes``).
Flax linen and Haiku modules are descriptions, and Python modules and classes are pickled
by name: nothing kept on them crosses."""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING

from dtype_lint.concepts.modules import module_evidence as module_kind
from dtype_lint.core.deferred import cst
from dtype_lint.core.flow.engine import FileFlow
from dtype_lint.core.words import matches_any

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.options import Options

# Words of a file that holds a dataset, a loader or a dataset pipeline.
_DATA_WORDS = ("Dataset", "DataLoader", "dataset", "DataPipeline", "IterableWrapper")
_MODULE_MAKERS = frozenset({"importlib.import_module", "types.ModuleType", "ModuleType", "sys.modules.get"})


@dataclasses.dataclass(frozen=True)
class Owner:
    """An object pickled whole: what it is (for the message), and how sure that is (a class
    the file's bases show: high; a name's convention: medium)."""

    what: str
    confidence: str = "high"
    basis: str = ""
    dataset: bool = False  # a dataset: it crosses only where a loader with workers receives it

    def inside(self, where: str) -> Owner:
        return dataclasses.replace(self, what=f"{self.what} ({where})")


def pickled_whole(name: str, kinds: frozenset[str], bases: tuple[str, ...], options: Options,
                  text: str = "") -> Owner | None:
    """How an instance of the class is pickled whole, or None (``text``: the file's)."""
    if kinds & {"torch_module", "dataset"}:
        return Owner(f"a {name} instance", dataset="torch_module" not in kinds)
    # Lightning data modules go to ddp_spawn workers with the trainer.
    if any(n.endswith("DataModule") for n in (name, *bases)):
        return Owner(f"a {name} data module (spawned trainers pickle it)", "medium",
                     f"{name} is a data module by its name")
    # Datasets and loaders hold transforms, processors, collators and readers, and
    # pickle them with themselves.
    if matches_any(name, options.transform_classes):
        # That a dataset holds it is assumed; where the file has no dataset or loader at
        # all, the object may as well live beside the model (a pipeline's processor).
        if any(word in text for word in _DATA_WORDS):
            return Owner(f"a {name} instance (datasets hold it)", "medium", f"{name} is a transform by its name")
        return Owner(f"a {name} instance (datasets hold it)", "low",
                     f"{name} is a transform by its name, and nothing in the file is a dataset or a loader")
    return None


def _through_class(receiver: cst.BaseExpression) -> bool:
    """``model.__class__`` or ``type(model)``, or anything below: a class's attribute, which
    pickle names with the class instead of storing it."""
    node = receiver
    while isinstance(node, cst.Attribute):
        if node.attr.value == "__class__":
            return True
        node = node.value
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "type"


def _mixin_of_a_module(name: str, ctx: FileContext) -> Owner | None:
    """A class that a module class of the file also derives from (``class Merged(nn.Linear,
    LoRALayer)``): its ``self`` is that module wherever the mixin's methods run. Medium: the
    mixin may serve classes that are no modules elsewhere."""
    def dotted(node: ast.expr) -> str | None:
        if isinstance(node, ast.Attribute):
            head = dotted(node.value)
            return f"{head}.{node.attr}" if head else None
        return ctx.scopes[0].aliases.get(node.id, node.id) if isinstance(node, ast.Name) else None

    for sub in ctx.file_index()(ast.ClassDef):
        bases = [dotted(base) for base in sub.bases]
        if name in bases and any(b and b != name and "torch_module" in ctx.kinds_of(b) for b in bases):
            return Owner(f"a {sub.name} instance (through its base {name})", "medium",
                         f"{name} is a base of the module class {sub.name} in this file")
    return None


def owner(receiver: cst.BaseExpression, ctx: FileContext, options: Options) -> Owner | None:
    """What ``receiver`` is, where it is pickled whole, or None: ``self`` in a class
    pickled whole, a model (by construction or ``module-names``) or anything inside one,
    an instance the file constructs of a class pickled whole."""
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        cls = ctx.method_class()
        if cls is None:
            return None
        return pickled_whole(cls.name, cls.kinds, cls.bases, options, ctx.text) or _mixin_of_a_module(cls.name, ctx)
    if python_module(receiver, ctx) or _through_class(receiver):
        return None
    model = module_kind(receiver, ctx, options)
    if model:
        return _model(model)
    root = _root(receiver)
    if root is not receiver and isinstance(root, cst.Name) and not python_module(root, ctx):
        model = module_kind(root, ctx, options)
        if model:
            # model.encoder.head = ...: a submodule (or any object) inside the model's
            # attributes is pickled with it
            return _model(model).inside("in one of its submodules")
    if root is not receiver and isinstance(root, cst.Name) and root.value == "self":
        holder = owner(root, ctx, options)  # self.codec.ready = ...: likewise, inside self
        return holder.inside("in one of its attributes") if holder is not None else None
    # An instance the file constructs: `ds = MyDataset(...)`, `dm = cls()` in a
    # classmethod of a data module.
    constructed = constructed_class(receiver, ctx)
    if constructed is None:
        return None
    known = ctx.known_classes.get(constructed)
    if known is not None:
        return pickled_whole(known.name, known.kinds, known.bases, options, ctx.text)
    return pickled_whole(constructed.rsplit(".", 1)[-1], frozenset(ctx.kinds_of(constructed)), (), options, ctx.text)


def _model(source) -> Owner:
    """A model, as sure as what makes it one (a construction, or ``module-names``)."""
    return Owner("a model", source.confidence, source.basis)


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
