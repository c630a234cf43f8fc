"""The ``jax.tree_*`` aliases JAX 0.6 removed (``jax.tree_map``, ``jax.tree_leaves``...),
read through the file's imports, and the ``jax.tree.*`` name each maps to: code that calls
them (most often to recast a parameter tree) fails on current JAX."""

from __future__ import annotations

from dtype_lint.core.deferred import cst
from dtype_lint.core.options import Options
from dtype_lint.core.rule import Finder, Site
from dtype_lint.core.shapes import Prefilter

_ALIASES = {
    "tree_map": "map", "tree_map_with_path": "map_with_path", "tree_leaves": "leaves",
    "tree_flatten": "flatten", "tree_unflatten": "unflatten", "tree_structure": "structure",
    "tree_transpose": "transpose", "tree_reduce": "reduce", "tree_all": "all",
}


class RemovedTreeAliases(Finder):
    """A read of a removed ``jax.tree_*`` alias."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: "tree_" in t, import_words=("tree",))

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Names that are not reads of the alias: attribute names and imported names.
        self._not_reads: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_reads.add(id(node.attr))
        old = node.attr.value
        if old in _ALIASES and self.ctx.resolve(node) == f"jax.{old}":
            new = cst.Attribute(cst.Attribute(node.value, cst.Name("tree")), cst.Name(_ALIASES[old]))
            self.found(Site(node, {"old": old, "new": _ALIASES[old]}, replace=((node, new),)))

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        self._not_reads.add(id(node.name))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self._not_reads:
            return
        old = node.value
        if old in _ALIASES and self.ctx.resolve(node) == f"jax.{old}":
            self.found(Site(node, {"old": old, "new": _ALIASES[old]}))
