"""DTL301: a pytree map that casts every leaf of a parameter tree."""

from __future__ import annotations

from dtype_lint.concepts import casting_helpers, test_code, trained, tree_casts
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


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
            and roles come from `dtype_lint.concepts.trained`: test code, the bodies of casting
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
        confidence="""
            `high` where the recast tree is seen to be trained; `medium` where a training
            use is assumed from context (nothing in the function, its class or the file
            trains); `low` in a file named for evaluation, inference or export.
            """,
        precision="very-high",
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
    finds = Finds(
        at=(tree_casts.TreeMapCasts,),
        unless=(test_code.TEST_CODE, casting_helpers.CASTING_CODE, trained.NOT_TRAINED, trained.EVALUATION_FILE,
                trained.TRAINING_UNSEEN),
    )

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
