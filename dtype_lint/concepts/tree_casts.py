"""Parameter trees recast leaf by leaf (``POLICY.md`` F3): a pytree map
(``jax.tree.map``, ``tree_util.tree_map``, ``optax``/``chex`` maps) whose function (a
lambda, a partial of one, or a function of this file) casts its leaves to another dtype,
over a tree that holds parameters (not gradients, updates or a batch). A cast to float32
or to another value's dtype keeps the tree's precision."""

from __future__ import annotations

import ast
import re
from typing import Callable, Sequence

from dtype_lint.concepts.casts import names_dtype
from dtype_lint.concepts.trained import paths
from dtype_lint.core.calls import argument, method_name
from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import is_float32
from dtype_lint.core.options import Options
from dtype_lint.core.rule import Finder, Site
from dtype_lint.core.shapes import Index, Prefilter, lines_of

TREE_MAPS = frozenset(
    {
        "jax.tree_map", "jax.tree_util.tree_map", "jax.tree.map",
        "jax.tree_map_with_path", "jax.tree_util.tree_map_with_path", "jax.tree.map_with_path",
        "optax.tree_utils.tree_map", "chex.tree_map",
    }
)
# Trees that are not parameters: casting gradients, updates or a batch is not a recast
# of the model's weights.
_NOT_PARAMS = ("grad", "update", "batch", "input", "output", "logit", "loss", "metric", "label")


_TREE_MAP = ("tree_map", "tree.map", "map_with_path")  # literals: `in` finds them faster than a regex
# The last part of every name in TREE_MAPS (an alias is a followed name).
_TREE_MAP_NAMES = frozenset({"tree_map", "map", "tree_map_with_path", "map_with_path"})
_LEAF_CAST = re.compile(r"astype|\.\s*to\s*\(|\.\s*view\s*\(|array\s*\(")


class TreeMapCasts(Finder):
    """A tree map whose function casts every leaf of a parameter tree."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: any(word in t for word in _TREE_MAP) and (
            u is None or _tree_map_cast(u.index, u.lines, u.function_text)),
            import_words=("tree",),
            # A function passed to a tree map by name is read through the name.
            body_words=_LEAF_CAST)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.resolve(node.func)
        if qualified not in TREE_MAPS:
            return
        fn = argument(node, 0, "f")
        tree = argument(node, 1, "tree")
        if fn is None or tree is None:
            return
        tree_text = self.ctx.module.code_for_node(tree).lower()
        if any(word in tree_text for word in _NOT_PARAMS):
            return
        if self._casts_leaves(fn):
            self.found(Site(node))

    def _casts_leaves(self, fn: cst.BaseExpression) -> bool:
        if isinstance(fn, cst.Lambda):
            leaves = {p.name.value for p in fn.params.params}
            return _body_casts(fn.body, leaves, self)
        if isinstance(fn, cst.Call) and fn.args:  # functools.partial(cast, dtype=...)
            return self._casts_leaves(fn.args[0].value)
        if isinstance(fn, cst.Name) and fn.value in self.ctx.functions:
            func = self.ctx.functions[fn.value]
            leaves = {p.name.value for p in func.params.params}
            return _body_casts(func.body, leaves, self)
        return False

def _body_casts(body: cst.CSTNode, leaves: set[str], finder: TreeMapCasts) -> bool:
    """Whether ``body`` casts one of ``leaves`` to a dtype."""
    from dtype_lint.core.traversal import descendants

    return any(_casts_leaf(node, leaves, finder) for node in descendants(body) if isinstance(node, cst.Call))


def _casts_leaf(node: cst.Call, leaves: set[str], finder: TreeMapCasts) -> bool:
    name = method_name(node)
    receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
    if name in ("astype", "to", "view") and _is_leaf(receiver, leaves):
        dtype = argument(node, 0, "dtype")
        if dtype is not None and names_dtype(dtype, finder.ctx) and not is_float32(dtype, finder.ctx) and not (
                paths(finder.ctx, finder.options).matches_existing_dtype(dtype)):
            return True
    qualified = finder.ctx.resolve(node.func) or ""
    if qualified.rsplit(".", 1)[-1] in ("asarray", "array") and node.args:
        dtype = argument(node, 1, "dtype")
        if _is_leaf(node.args[0].value, leaves) and dtype is not None and not is_float32(dtype, finder.ctx) and not (
                paths(finder.ctx, finder.options).matches_existing_dtype(dtype)):
            return True
    return False


def _is_leaf(expr: cst.BaseExpression | None, leaves: set[str]) -> bool:
    return isinstance(expr, cst.Name) and expr.value in leaves


# The finder's shape, checked on CPython's ast by the prefilter.
def _tree_map_cast(index: Index, lines: Sequence[str], functions: Callable[[str], str]) -> bool:
    """A tree map whose function (a lambda, a partial of one, or a function of this
    file, whose text ``functions`` returns) casts its leaves."""
    for node in index(ast.Call):
        if not node.args:
            continue
        func = node.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if last not in _TREE_MAP_NAMES:
            continue
        fn = node.args[0]
        while isinstance(fn, ast.Call) and fn.args:  # functools.partial(cast, ...)
            fn = fn.args[0]
        text = functions(fn.id) if isinstance(fn, ast.Name) else lines_of(fn, lines)
        if _LEAF_CAST.search(text):
            return True
    return False
