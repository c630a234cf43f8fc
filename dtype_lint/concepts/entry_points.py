"""Where a dtype is the user's choice rather than a layer's: user-facing entry points (an
alternate constructor such as ``from_pretrained``, ``main``, a model wrapper's or a plain
class's constructor, a function that takes the model it prepares) and data-side code
(loaders, collators, augmentation, pre- and post-processing, media processors), whose
float32 is the data's (``POLICY.md`` F1: "a top-level entry point that users configure";
"data pipelines and loaders")."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from dtype_lint.concepts.layer_facts import key_of, layer_facts
from dtype_lint.concepts.modules import module_kind
from dtype_lint.core.words import matches_any

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext, Scope
    from dtype_lint.core.options import Options


def data_side(name: str, options: Options) -> bool:
    """A function, class or module named as data-side code (``data-side-names``)."""
    return matches_any(name.lower(), options.data_side_names)


def data_side_class(ctx: FileContext, options: Options, name: str) -> bool:
    """A class named as data-side code, unless its structure makes it a layer."""
    return data_side(name, options) and not layer_facts(ctx, options).is_layer(name)


def entry_point(ctx: FileContext, options: Options, function: Scope) -> bool:
    """Whether the function's defaults are a user's choice rather than a layer's."""
    if (matches_any(function.name, options.entry_point_functions) or data_side(function.name, options)
            or data_side(ctx.module_stem, options)):
        return True
    cls = ctx.method_class()
    if cls is not None and data_side_class(ctx, options, cls.name):
        return True
    # A model factory (it builds a layer and hands it back): the user's knob, which
    # POLICY.md counts with the entry points.
    if layer_facts(ctx, options).returns_model(key_of(ctx)):
        return True
    # A function that takes the model applies the user's dtype to it (an optimize or
    # prepare step), like from_pretrained does.
    params = function.node.params  # type: ignore[attr-defined]
    if any(module_kind(p.name, ctx, options) for p in (*params.params, *params.kwonly_params)
           if p.name.value != "self"):
        return True
    if function.name != "__init__" or cls is None:
        return False
    # A PreTrainedModel-style wrapper's constructor is the user's entry point, and so is
    # a plain class's (no base): it configures an object that is not a layer.
    bases = tuple(b for b in cls.bases if b != "object")
    return not bases or any(matches_any(b.rsplit(".", 1)[-1], options.entry_point_classes) for b in bases + (cls.name,))


# Parameters and fields through which a model loads its own weights: a class that takes
# one is a top-level model users configure, not a building block.
_PRETRAINED_WORDS = frozenset({"pretrained", "ckpt", "checkpoint", "weights_path", "ckpt_dir", "checkpoint_path"})


def loads_pretrained(ctx: FileContext, options: Options) -> bool:
    """Whether the function, or the class the traversal stands in, takes a pretrained or
    checkpoint argument or field: a top-level model whose dtype is the user's knob."""
    names: set[str] = set()
    function = ctx.function
    if function is not None:
        params = function.node.params  # type: ignore[attr-defined]
        names |= {p.name.value for p in (*params.params, *params.kwonly_params)}
    cls = ctx.current_class
    info = layer_facts(ctx, options).classes.get(cls.name) if cls is not None else None
    if info is not None:
        names |= {node.target.id for node in info.node.body
                  if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
        init = info.methods.get("__init__")
        names |= set(init.params) if init is not None else set()
    return bool({n.lower() for n in names} & _PRETRAINED_WORDS)
