"""DTL304: the removed `jax.tree_*` aliases, with a safe fix to `jax.tree.*`."""

from __future__ import annotations

from dtype_lint.concepts import tree_aliases
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


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
        confidence="""
            `high`: the removed alias is read from the import and the call.
            """,
        known_limits="Aliases reached through another name (`t = jax.tree_map`) are reported where they are read.",
        default_enabled=False,
    )
    message = "jax.{old} was removed in JAX 0.6; use jax.tree.{new}"
    fix = "safe"
    finds = Finds(at=(tree_aliases.RemovedTreeAliases,))

    valid = (
        "import jax\njax.tree.map(f, t)",
        "import jax\njax.tree_util.tree_map(f, t)",
    )
    invalid = (
        Invalid("import jax\njax.tree_map(f, t)", "import jax\njax.tree.map(f, t)"),
        Invalid("import jax as j\nj.tree_leaves(t)", "import jax as j\nj.tree.leaves(t)"),
        Invalid("from jax import tree_map\ntree_map(f, t)"),
    )
