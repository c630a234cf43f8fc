"""Codes reported by the runtime checks (guard, tree checks, pickling checks).

Each check describes itself with a :class:`~dtype_lint.core.ruledoc.RuleDoc` of kind
``"runtime"`` so that ``dtype-lint explain DTL191`` and the rules table treat
runtime checks and static rules alike.
"""

from __future__ import annotations

from dtype_lint.core.ruledoc import RuleDoc

_FIX_SAFETY = "Runtime check; nothing to fix automatically."

RUNTIME_CHECKS: tuple[RuleDoc, ...] = (
    RuleDoc(
        code="DTL191",
        name="runtime-compute-dtype",
        summary="A floating activation is outside `policy.compute`.",
        what_it_does="""
            While `dtype_lint.runtime.guard(model, policy)` is active, checks the floating
            outputs of every submodule call and reports those whose dtype is not
            `policy.compute`, with the path of the module that produced them.
        """,
        why_bad="""
            A mixed-precision policy only saves memory and time if activations really are
            in the compute dtype. One module that upcasts (a norm layer with an unset
            `dtype`, an explicit `.float()`) makes every later layer run in float32, or
            makes the next layer silently downcast, and nothing in the code says so.
        """,
        example="""
            import flax.linen as nn

            class Block(nn.Module):
                @nn.compact
                def __call__(self, x):            # x is bfloat16
                    return nn.LayerNorm()(x)      # dtype unset: returns float32

            with guard(Block(), "mixed_bfloat16") as g:
                Block().apply(variables, x)
            # DTL191 LayerNorm_0: activation float32, policy.compute is bfloat16
        """,
        use_instead="""
            class Block(nn.Module):
                @nn.compact
                def __call__(self, x):
                    return nn.LayerNorm(dtype=jnp.bfloat16)(x)
        """,
        fix_safety=_FIX_SAFETY,
        known_limits="""
            Only module outputs are checked, not tensors created and consumed inside one
            `forward`/`__call__`. The outermost call's outputs are checked against
            `policy.output` (DTL193) instead. When a module's output is a silent widening
            (DTL192) only DTL192 is reported for it. Only root causes are reported: a
            module that passes on a dtype its inputs already carried is counted under the
            finding that produced it. Under an autocast policy, float32 is accepted where
            autocast produces it. Under `jax.jit` the check runs at trace time, so a
            cached compiled function is not re-checked.
        """,
        kind="runtime",
    ),
    RuleDoc(
        code="DTL192",
        name="runtime-silent-widening",
        summary="A module returns float32 although its floating inputs and params are all lower precision.",
        what_it_does="""
            While a guard is active, reports a module call whose output contains a float32
            array although every floating input and every floating parameter of the module
            is narrower (bfloat16, float16, float8).
        """,
        why_bad="""
            Nothing the caller passed in asked for float32: the module widened on its own
            (a `.float()` in an RMSNorm, a `dtype=float32` argument to softmax, a Flax
            module with `dtype=jnp.float32` fed bf16 parameters). Everything downstream
            then runs, and is stored, at twice the width.
        """,
        example="""
            class RMSNorm(torch.nn.Module):
                def forward(self, x):
                    x = x.float()
                    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
                    return self.weight * x   # bf16 weight * f32 x -> float32
        """,
        use_instead="""
            class RMSNorm(torch.nn.Module):
                def forward(self, x):
                    h = x.float()
                    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
                    return self.weight * h.to(x.dtype)
        """,
        fix_safety=_FIX_SAFETY,
        known_limits="""
            A module without floating inputs (an embedding fed token ids) is never
            reported. The outermost call is checked by DTL193 instead.
        """,
        kind="runtime",
    ),
    RuleDoc(
        code="DTL193",
        name="runtime-output-dtype",
        summary="The output of the outermost call does not follow `policy.output`.",
        what_it_does="""
            Checks the floating outputs of the guarded model's own call against
            `policy.output`: a dtype, `"compute"`, `"default"` (the framework's default
            float dtype) or `"input"` (the dtype of the floating inputs of that call;
            inputs of mixed floating dtypes are reported too, naming them).
        """,
        why_bad="""
            Wrappers disagree on what a model should return: outputs converted to the
            default dtype, cast back to the input's dtype, or left as computed. Code that
            consumes the output (a loss, a metric, a checkpoint) silently assumes one of
            the three; the policy states which one is expected and the guard checks it.
        """,
        example="""
            with guard(model, "params=float32,compute=bfloat16,output=float32"):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    logits = model(x)   # bfloat16 logits reach the loss
        """,
        use_instead="""
            with guard(model, "params=float32,compute=bfloat16,output=float32"):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    logits = model(x).float()
        """,
        fix_safety=_FIX_SAFETY,
        known_limits="""
            With `output="input"` and no floating input (token ids), the framework's
            default float dtype is expected. Only the outermost call of the guarded model
            is checked, not other methods called on it.
        """,
        kind="runtime",
    ),
    RuleDoc(
        code="DTL291",
        name="runtime-unpicklable",
        summary="An object a spawned worker needs cannot be pickled.",
        what_it_does="""
            `check_picklable(obj)` pickles the object with the standard pickler, as the
            `spawn` and `forkserver` start methods do, and on failure walks it (module
            children, `__dict__`, containers, a DataLoader's dataset, sampler,
            `collate_fn` and `worker_init_fn`) to name the attribute path of each culprit,
            such as `model.head.act: <lambda> defined at train.py:41`.
        """,
        why_bad="""
            Code that works with `fork` (Linux default up to Python 3.13) fails with
            `spawn` (macOS, Windows, CUDA workers, Python 3.14's new default), usually
            with an error that names a type but not where the object lives.
        """,
        example="""
            class Head(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.act = lambda x: x.clamp(min=0)
        """,
        use_instead="""
            class Head(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.act = torch.nn.ReLU()
        """,
        fix_safety=_FIX_SAFETY,
        known_limits="""
            Objects with a custom `__reduce__` or `__getstate__` are walked through their
            `__dict__`, which may differ from what they really pickle. Tensors are pickled
            with the standard pickler, not moved to shared memory as torch's
            `ForkingPickler` reducers would.
        """,
        kind="runtime",
    ),
    RuleDoc(
        code="DTL391",
        name="runtime-param-dtype",
        summary="A parameter is not in `policy.params`.",
        what_it_does="""
            `check_tree`/`assert_tree_dtypes` and an active guard report floating
            parameters (and, for trees, buffers and any floating leaf) whose dtype differs
            from the expected one, with their path (`params/Dense_0/kernel`,
            `encoder.layers.0.linear1.weight`).
        """,
        why_bad="""
            Parameters stored in a half-precision dtype lose the small updates an optimizer
            makes; parameters in float32 when bf16 was intended double memory. Either way
            the cause is usually a load, a recast or a `.to()` far from where it shows.
        """,
        example="""
            model = model.to(torch.bfloat16)          # also recasts the master weights
            assert_tree_dtypes(model, "mixed_bfloat16")
        """,
        use_instead="""
            model = model.to(torch.float32)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = model(x)
        """,
        fix_safety=_FIX_SAFETY,
        known_limits="""
            Non-floating leaves are skipped. A torch guard checks the parameters of the
            whole model at each call of the model (not when a submodule is called on its
            own); a Flax guard checks the direct parameters of each module as it is
            called, so there parameters of modules that are never called are only seen by
            `check_tree`.
        """,
        kind="runtime",
    ),
    RuleDoc(
        code="DTL392",
        name="runtime-bypassed-param-dtype",
        summary="A Flax parameter's dtype differs from its module's own `param_dtype`.",
        what_it_does="""
            While a guard watches a Flax model, reports parameters whose dtype differs from
            the `param_dtype` attribute of the module that owns them, when that module's
            `dtype` is unset (with `dtype` set, DTL393 is reported instead).
        """,
        why_bad="""
            The parameters were recast outside the module (`jax.tree.map(lambda p:
            p.astype(jnp.bfloat16), params)`), bypassing the module's configuration:
            re-initialising, restoring a checkpoint or reading the module definition all
            give a different dtype than the one that actually runs.
        """,
        example="""
            params = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)
            nn.Dense(16).apply(params, x)   # param_dtype says float32
        """,
        use_instead="""
            layer = nn.Dense(16, param_dtype=jnp.bfloat16)
            params = layer.init(key, x)
        """,
        fix_safety=_FIX_SAFETY,
        known_limits="""
            Only modules that have a `param_dtype` attribute are checked. Under `jax.jit`
            the check runs at trace time.
        """,
        kind="runtime",
    ),
    RuleDoc(
        code="DTL393",
        name="runtime-ineffective-recast",
        summary="Recast Flax parameters cannot take effect because the module's `dtype` is set.",
        what_it_does="""
            While a guard watches a Flax model, reports parameters recast away from the
            module's `param_dtype` when the module's `dtype` is set: Flax promotes the
            parameters to `dtype` before computing, so the recast changes nothing but the
            storage (and the precision lost in rounding).
        """,
        why_bad="""
            Recasting parameters to bf16 to "run in bf16" does nothing when the module is
            configured with `dtype=jnp.float32`: the kernel is cast back to float32 and the
            matmul runs in float32, with the precision already lost.
        """,
        example="""
            layer = nn.Dense(16, dtype=jnp.float32)
            params = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)
            layer.apply(params, x)          # still a float32 matmul
        """,
        use_instead="""
            layer = nn.Dense(16, dtype=jnp.bfloat16)   # compute dtype
            layer.apply(params, x)                     # float32 master params
        """,
        fix_safety=_FIX_SAFETY,
        known_limits="""
            Only modules that have both `param_dtype` and `dtype` attributes are checked.
            A recast to the module's own `dtype` (Hugging Face's `to_bf16` on a model
            configured in bf16) is not reported: the module computes in that dtype either
            way. Under `jax.jit` the check runs at trace time.
        """,
        kind="runtime",
    ),
)

_BY_CODE = {doc.code: doc for doc in RUNTIME_CHECKS}
_BY_NAME = {doc.name: doc for doc in RUNTIME_CHECKS}


def get_check(code_or_name: str) -> RuleDoc:
    """The runtime check with this code (``"DTL191"``) or name (``"runtime-compute-dtype"``)."""
    key = code_or_name.strip()
    doc = _BY_CODE.get(key.upper()) or _BY_NAME.get(key.lower())
    if doc is None:
        raise KeyError(f"unknown runtime check: {code_or_name!r}")
    return doc
