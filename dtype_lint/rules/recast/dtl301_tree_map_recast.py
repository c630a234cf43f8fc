"""DTL301: a pytree map that casts every leaf of a parameter tree."""

from __future__ import annotations

import ast
import re
from typing import Callable, Sequence

from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import is_float32
from dtype_lint.core.roles import roles
from dtype_lint.core.shapes import Index, Prefilter, lines_of
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options
from dtype_lint.rules.patterns import argument, method_name, names_dtype

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

class TreeMapRecast(Rule):
    doc = RuleDoc(
        code="DTL301",
        name="tree-map-recast",
        summary="Parameter tree recast with a tree map",
        what_it_does="""
            Checks `jax.tree.map`, `jax.tree_util.tree_map`, `jax.tree_map` and their
            `_with_path` forms when the mapped function casts each leaf
            (`x.astype(dtype)`, `jnp.asarray(x, dtype=...)`, `x.to(dtype)`), whether it is
            a lambda, a function defined in the file, or a `functools.partial`. Code paths
            and roles come from `dtype_lint.core.roles`: test code, the bodies of casting
            helpers (`to_bf16`, `tree_cast`, `cast_*`), classes whose job is casting, and
            inference or export paths are not reported.
            """,
        why_bad="""
            Recasting the parameter tree by hand bypasses the modules' own `dtype` and
            `param_dtype`: Flax modules whose `dtype` is set cast the parameters back at
            every call (the recast does nothing but lose precision), optimizer state is
            built in the wrong dtype, and master weights in bfloat16 stop learning small
            updates. Configure the modules, or use a policy (jmp) that casts at the
            boundary.
            """,
        example="""
            params = jax.tree.map(lambda x: x.astype(jnp.bfloat16), params)
            """,
        use_instead="""
            model = Transformer(dtype=jnp.bfloat16, param_dtype=jnp.float32)
            # or, with a policy: policy = jmp.get_policy("params=float32,compute=bfloat16")
            """,
        known_limits="""
            Casts to float32 restore full precision and are not reported (a checkpoint
            widened for export, master weights), nor are casts to another leaf's dtype
            (`lambda s, i: i.astype(s.dtype)`), which keep the tree's dtypes. Trees named
            like gradients, updates,
            batches or outputs are not reported, and
            casts inside explicit casting helpers (`to_bf16`, `cast_tree`, ...) are not
            either: their call sites are DTL303's. A mapped function imported from another
            module is not followed.
            """,
    )
    message = (
        "casting every leaf of the parameter tree bypasses the modules' dtype/param_dtype: "
        "modules cast back at each call and optimizer state takes the wrong dtype; set "
        "dtype/param_dtype on the modules or use a mixed-precision policy"
    )
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: any(word in t for word in _TREE_MAP) and (
            u is None or _tree_map_cast(u.index, u.lines, u.function_text)),
            import_words=("tree",),
            # A function passed to a tree map by name is read through the name.
            body_words=_LEAF_CAST)

    valid = (
        "import jax\nstate = jax.tree.map(lambda s, i: i.astype(s.dtype), state, fresh)",
        "import jax\ndef tree_cast(tree, dtype):\n    return jax.tree.map(lambda t: t.astype(dtype), tree)",
        "import jax\nimport jax.numpy as jnp\ndef test_bf16(params):\n"
        "    return jax.tree.map(lambda t: t.astype(jnp.bfloat16), params)",
        "import jax\nzeros = jax.tree.map(lambda x: jnp.zeros_like(x), params)",
        "import jax\ngrads = jax.tree.map(lambda g: g.astype(jnp.float32), grads)",
        "import jax\ndef to_bf16(params):\n    return jax.tree.map(lambda x: x.astype(jnp.bfloat16), params)",
        "import jax\nnorms = jax.tree.map(lambda x: jnp.linalg.norm(x), params)",
        "import jax\nimport numpy as np\n"
        "state = jax.tree.map(lambda p: p.astype(np.float32) if p.dtype == jnp.bfloat16 else p, state)",
    )
    invalid = (
        Invalid("import jax\nimport jax.numpy as jnp\n"
                "params = jax.tree.map(lambda x: x.astype(jnp.bfloat16), params)"),
        Invalid("from jax.tree_util import tree_map\n"
                "state = tree_map(lambda p: jnp.asarray(p, dtype=jnp.float16), state)"),
        Invalid("import jax\ndef cast(x):\n    return x.astype(jnp.bfloat16)\n"
                "params = jax.tree_util.tree_map(cast, params)"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.resolve(node.func)
        if qualified not in TREE_MAPS:
            return
        found = roles(self.ctx, self.options)
        if found.skipped():
            return
        fn = argument(node, 0, "f")
        tree = argument(node, 1, "tree")
        if fn is None or tree is None:
            return
        tree_text = self.ctx.module.code_for_node(tree).lower()
        if any(word in tree_text for word in _NOT_PARAMS):
            return
        if self._casts_leaves(fn) and found.path(node) is None:
            self.report(node)

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


def _body_casts(body: cst.CSTNode, leaves: set[str], rule: TreeMapRecast) -> bool:
    """Whether ``body`` casts one of ``leaves`` to a dtype."""
    from dtype_lint.core.traversal import descendants

    return any(_casts_leaf(node, leaves, rule) for node in descendants(body) if isinstance(node, cst.Call))


def _casts_leaf(node: cst.Call, leaves: set[str], rule: TreeMapRecast) -> bool:
    name = method_name(node)
    receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
    if name in ("astype", "to", "view") and _is_leaf(receiver, leaves):
        dtype = argument(node, 0, "dtype")
        if dtype is not None and names_dtype(dtype, rule.ctx) and not is_float32(dtype, rule.ctx) and not (
                roles(rule.ctx, rule.options).matches_existing_dtype(dtype)):
            return True
    qualified = rule.ctx.resolve(node.func) or ""
    if qualified.rsplit(".", 1)[-1] in ("asarray", "array") and node.args:
        dtype = argument(node, 1, "dtype")
        if _is_leaf(node.args[0].value, leaves) and dtype is not None and not is_float32(dtype, rule.ctx) and not (
                roles(rule.ctx, rule.options).matches_existing_dtype(dtype)):
            return True
    return False


def _is_leaf(expr: cst.BaseExpression | None, leaves: set[str]) -> bool:
    return isinstance(expr, cst.Name) and expr.value in leaves


# The rule's shape, checked on CPython's ast by the prefilter (see its Prefilter).
def _tree_map_cast(index: Index, lines: Sequence[str], functions: Callable[[str], str]) -> bool:
    """DTL301: a tree map whose function (a lambda, a partial of one, or a function of this
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
