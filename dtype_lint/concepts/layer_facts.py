"""The layer facts of one file: its layers and forward path, the casts back, the dtype
roles, buffers and quantised code (each a concept module of its own), computed once per
text from CPython's ``ast`` of the whole file and shared by the prefilter's shapes and the
rules."""

from __future__ import annotations

import ast
import collections

from dtype_lint.concepts.buffers import Buffers
from dtype_lint.concepts.definitions import Key
from dtype_lint.concepts.islands import CastsBack
from dtype_lint.concepts.layers import Layers
from dtype_lint.concepts.quantised import Quantised
from dtype_lint.concepts.storage import DtypeRoles
from dtype_lint.core.guards import parse_quietly
from dtype_lint.frameworks.bases import LOSS_CLASSES


class LayerFacts(Layers, CastsBack, DtypeRoles, Buffers, Quantised):
    """The layers of one file, its forward path, and the benign dtype parameters and fields."""

    def __init__(self, tree: ast.Module | None, compute_names: frozenset[str], excluded: tuple[str, ...]) -> None:
        super().__init__(tree, compute_names, excluded)
        if tree is not None:
            self._find_layers()
            self._find_forward_path()


# Facts of the last few texts: the prefilter's shape check and the rules ask for the same
# file's, and a text's facts do not change.
_MEMO: collections.OrderedDict[tuple, LayerFacts] = collections.OrderedDict()


def facts(text: str, options, tree: ast.Module | None = None) -> LayerFacts:
    """The layer facts of a whole source text, computed once per text and options;
    ``tree`` is the text's ``ast`` where the caller has it (else it is parsed here)."""
    compute = frozenset(options.compute_dtype_names) - frozenset(options.param_dtype_names)
    key = (text, compute, tuple(LOSS_CLASSES) + tuple(options.entry_point_classes))
    found = _MEMO.get(key)
    if found is None:
        if tree is None:
            tree = parse_quietly(text)
        found = _MEMO[key] = LayerFacts(tree, key[1], key[2])
        if len(_MEMO) > 2:
            _MEMO.popitem(last=False)
    return found


def key_of(ctx) -> Key:
    """The key of the function whose body a LibCST rule is in (see FileContext)."""
    from dtype_lint.core.deferred import cst

    names = tuple(scope.name for scope in ctx.scopes if isinstance(scope.node, cst.FunctionDef))
    cls = ctx.classes[-1].name if ctx.classes else None
    return (cls, names)


def layer_facts(ctx, options) -> LayerFacts:
    """The layer facts of the file a rule is linting."""
    return facts(ctx.text, options, ctx.file_tree())
