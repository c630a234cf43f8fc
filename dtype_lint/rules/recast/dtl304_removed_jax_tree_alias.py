"""DTL304: the removed `jax.tree_*` aliases, with a safe fix to `jax.tree.*`."""

from __future__ import annotations

from dtype_lint.core.deferred import cst
from dtype_lint.core.shapes import Prefilter
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options

_ALIASES = {
    "tree_map": "map", "tree_map_with_path": "map_with_path", "tree_leaves": "leaves",
    "tree_flatten": "flatten", "tree_unflatten": "unflatten", "tree_structure": "structure",
    "tree_transpose": "transpose", "tree_reduce": "reduce", "tree_all": "all",
}


class DeprecatedTreeAlias(Rule):
    doc = RuleDoc(
        code="DTL304",
        name="removed-jax-tree-alias",
        summary="jax.tree_map and friends were removed; use jax.tree.map",
        what_it_does="""
            Checks for `jax.tree_map`, `jax.tree_leaves`, `jax.tree_flatten` and the other
            `jax.tree_*` aliases, and rewrites them to `jax.tree.map`, `jax.tree.leaves`,
            ... This is the first step of migrating parameter-tree code (where DTL301's
            recasts live) to a current JAX. Not enabled by default: select `DTL304`.
            """,
        why_bad="""
            The aliases were deprecated in JAX 0.4.25 and removed in JAX 0.6: code that
            uses them fails with `AttributeError` on a current JAX.
            """,
        example="""
            params = jax.tree_map(lambda x: x * 2, params)
            """,
        use_instead="""
            params = jax.tree.map(lambda x: x * 2, params)
            """,
        fix_safety="""
            Safe: `jax.tree.<name>` takes the same arguments as the alias. The fix applies
            only where the alias is written as an attribute of `jax`; a `from jax import
            tree_map` is reported without a fix.
            """,
        known_limits="Aliases reached through another name (`t = jax.tree_map`) are reported where they are read.",
        default_enabled=False,
    )
    message = "jax.{old} was removed in JAX 0.6; use jax.tree.{new}"
    fix = "safe"
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: "tree_" in t, import_words=("tree",))

    valid = (
        "import jax\njax.tree.map(f, t)",
        "import jax\njax.tree_util.tree_map(f, t)",
    )
    invalid = (
        Invalid("import jax\njax.tree_map(f, t)", "import jax\njax.tree.map(f, t)"),
        Invalid("import jax as j\nj.tree_leaves(t)", "import jax as j\nj.tree.leaves(t)"),
        Invalid("from jax import tree_map\ntree_map(f, t)"),
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Names that are not reads of the alias: attribute names and imported names.
        self._not_reads: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_reads.add(id(node.attr))
        old = node.attr.value
        if old in _ALIASES and self.ctx.resolve(node) == f"jax.{old}":
            new = cst.Attribute(cst.Attribute(node.value, cst.Name("tree")), cst.Name(_ALIASES[old]))
            self.report(node, self.message.format(old=old, new=_ALIASES[old]), replace=(node, new))

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        self._not_reads.add(id(node.name))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self._not_reads:
            return
        old = node.value
        if old in _ALIASES and self.ctx.resolve(node) == f"jax.{old}":
            self.report(node, self.message.format(old=old, new=_ALIASES[old]))
