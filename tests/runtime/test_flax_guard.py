"""guard() on real Flax models on the CPU, eagerly and under jax.jit."""

import warnings

import pytest

from dtype_lint.runtime import DTypeGuardWarning, DTypeViolationError, guard

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
nn = pytest.importorskip("flax.linen")
from flax.linen import module as flax_module  # noqa: E402

BF16 = jnp.bfloat16


def _codes(g):
    return sorted((v.code, v.module_path) for v in g.violations)


def _bf16(tree):
    return jax.tree.map(lambda p: p.astype(BF16), tree)


class NormBlock(nn.Module):
    norm_dtype: object = None

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(8, dtype=BF16)(x)
        x = nn.LayerNorm(dtype=self.norm_dtype)(x)
        return nn.Dense(4, dtype=BF16)(x).astype(jnp.float32)


X = jnp.ones((2, 8), BF16)


def test_layernorm_with_unset_dtype_widens_DTL191():
    model = NormBlock()
    variables = model.init(jax.random.key(0), X)
    # What flax really does: bf16 in, float32 params, dtype=None -> float32 out.
    assert nn.LayerNorm().apply({"params": variables["params"]["LayerNorm_0"]}, X).dtype == jnp.float32
    with guard(model, "mixed_bfloat16", on_violation="record") as g:
        jax.jit(model.apply)(variables, X)
    assert _codes(g) == [("DTL191", "LayerNorm_0")]
    assert g.violations[0].message == "LayerNorm returned float32 activations from inputs bfloat16, policy.compute is bfloat16"


def test_correct_model_is_silent():
    model = NormBlock(norm_dtype=BF16)
    variables = model.init(jax.random.key(0), X)
    with guard(model, "mixed_bfloat16") as g:
        out = model.apply(variables, X)
    assert out.dtype == jnp.float32 and g.violations == []


class F32Dense(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(4, dtype=jnp.float32)(x).astype(BF16)


def test_recast_params_with_dtype_set_DTL393_and_widening_DTL192():
    model = F32Dense()
    recast = _bf16(model.init(jax.random.key(0), X))
    with guard(model, "bfloat16", on_violation="record") as g:
        model.apply(recast, X)
    assert _codes(g) == [("DTL192", "Dense_0"), ("DTL393", "Dense_0")]
    assert ("'bias', 'kernel' recast to bfloat16 (param_dtype=float32) cannot take effect: "
            "Dense.dtype=float32 sets the compute dtype") in [v.message for v in g.violations]
    # The recast really had no effect on the computation: the Dense still returns float32.
    assert nn.Dense(4, dtype=jnp.float32).apply({"params": recast["params"]["Dense_0"]}, X).dtype == jnp.float32


class PlainDense(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(4)(x)


def test_recast_params_bypassing_param_dtype_DTL392_DTL391():
    model = PlainDense()
    recast = _bf16(model.init(jax.random.key(0), X))
    with guard(model, "mixed_bfloat16", on_violation="record") as g:
        out = jax.jit(model.apply)(recast, X)
    assert out.dtype == BF16
    assert _codes(g) == [("DTL193", "(root)"), ("DTL391", "Dense_0"), ("DTL392", "Dense_0")]
    assert ("'bias', 'kernel' are bfloat16 but Dense.param_dtype is float32: recast outside the "
            "module's configuration") in [v.message for v in g.violations]


class LeaveAsComputed(nn.Module):
    """A wrapper that returns whatever its bf16 layer computed."""

    @nn.compact
    def __call__(self, x):
        return nn.Dense(4, dtype=BF16, param_dtype=BF16)(x)


def test_output_conventions_on_flax():
    model = LeaveAsComputed()
    variables = model.init(jax.random.key(0), X)
    for output, x, expected in [("input", X, []), ("input", X.astype(jnp.float32), [("DTL193", "(root)")]),
                                ("default", X, [("DTL193", "(root)")]), ("compute", X, [])]:
        with guard(model, f"p=bf16,c=bf16,o={output}", on_violation="record") as g:
            model.apply(variables, x)
        assert _codes(g) == expected, output


def test_jit_checks_at_trace_time_only():
    model = NormBlock()
    variables = model.init(jax.random.key(0), X)
    apply = jax.jit(model.apply)
    with guard(model, "mixed_bfloat16", on_violation="record") as g:
        apply(variables, X)
        apply(variables, X)  # cached: not traced again
    assert g._recorder.count(g.violations[0]) == 1


def test_raise_under_jit_and_nothing_left_installed():
    model = NormBlock()
    variables = model.init(jax.random.key(0), X)
    with pytest.raises(DTypeViolationError, match="DTL191 LayerNorm_0"):
        with guard(model, "mixed_bfloat16"):
            jax.jit(model.apply)(variables, X)
    assert len(flax_module._global_interceptor_stack) == 0
    with pytest.raises(ZeroDivisionError):
        with guard(model, "mixed_bfloat16", on_violation="record"):
            assert len(flax_module._global_interceptor_stack) == 1
            1 / 0
    assert len(flax_module._global_interceptor_stack) == 0


def test_other_models_pass_through():
    watched, other = PlainDense(), F32Dense()
    recast = _bf16(other.init(jax.random.key(0), X))
    with pytest.warns(DTypeGuardWarning, match="checked no module call"):
        with guard(watched, "bfloat16", on_violation="record") as g:
            other.apply(recast, X)
    assert g.violations == []


def test_init_is_checked_too():
    model = NormBlock()
    with guard(model, "mixed_bfloat16", on_violation="record") as g:
        model.init(jax.random.key(0), X)
    assert _codes(g) == [("DTL191", "LayerNorm_0")]


def test_recast_to_the_modules_own_dtype_is_not_DTL393():
    # Hugging Face's documented route: to_bf16(params) on a model configured with dtype=bf16.
    model = NormBlock(norm_dtype=BF16)
    recast = _bf16(model.init(jax.random.key(0), X))
    with guard(model, "bfloat16", on_violation="record") as g:
        model.apply(recast, X)
    assert "DTL393" not in {v.code for v in g.violations}
    # A recast away from the module's dtype still is.
    with guard(F32Dense(), "bfloat16", on_violation="record") as g:
        F32Dense().apply(_bf16(F32Dense().init(jax.random.key(0), X)), X)
    assert ("DTL393", "Dense_0") in _codes(g)


class TiedHead(nn.Module):
    """A GPT-2 style tied head: the embedding's matrix applied through a nested .apply."""

    @nn.compact
    def __call__(self, ids):
        embed = nn.Embed(10, 8, dtype=BF16, param_dtype=BF16, name="wte")
        h = embed(ids)
        kernel = self.variables["params"]["wte"]["embedding"].T
        head = nn.Dense(10, use_bias=False, dtype=jnp.float32, param_dtype=BF16, name="lm_head")  # noqa: DTL103 (a deliberate hazard)
        return head.apply({"params": {"kernel": kernel}}, h)


def test_nested_apply_is_reported_under_its_own_name():
    model = TiedHead()
    ids = jnp.array([[1, 2, 3]])
    variables = model.init(jax.random.key(0), ids)
    with guard(model, "bfloat16", on_violation="record") as g:
        model.apply(variables, ids)
    assert ("DTL192", "lm_head") in _codes(g)
    assert g.violations[0].message == "Dense returned float32 from inputs bfloat16 and params bfloat16"


class Wrapper:
    """The shape of a Hugging Face Flax model: the linen module in ``.module``, params outside."""

    def __init__(self, module, params):
        self.module = module
        self.params = params

    def __call__(self, x):
        return self.module.apply(self.params, x)


def test_guard_accepts_a_wrapper_holding_the_module_and_explains_other_objects():
    module = NormBlock()
    wrapper = Wrapper(module, module.init(jax.random.key(0), X))
    with guard(wrapper, "mixed_bfloat16", on_violation="record") as g:
        wrapper(X)
    assert g.model is module and _codes(g) == [("DTL191", "LayerNorm_0")]
    with pytest.raises(TypeError, match=r"holds one in \.module.*for a jax\.jit function, pass the Flax module"):
        guard(jax.jit(module.apply), "mixed_bfloat16")


def test_a_cached_jit_function_is_not_rechecked_and_the_guard_says_so():
    model = NormBlock()
    variables = model.init(jax.random.key(0), X)
    apply = jax.jit(model.apply)
    apply(variables, X)  # compiled before the guard: the next call is a cache hit
    with pytest.warns(DTypeGuardWarning, match="checked no module call; likely: a jax.jit function compiled"):
        with guard(model, "mixed_bfloat16", on_violation="record") as g:
            apply(variables, X)
    assert g.violations == [] and g.modules_checked == 0


def test_apply_from_another_thread_is_not_seen_and_the_guard_says_so():
    import threading

    model = NormBlock()
    variables = model.init(jax.random.key(0), X)
    with pytest.warns(DTypeGuardWarning, match="from another thread"):
        with guard(model, "mixed_bfloat16", on_violation="record") as g:
            worker = threading.Thread(target=model.apply, args=(variables, X))
            worker.start()
            worker.join()
    assert g.modules_checked == 0


class _Stack(nn.Module):
    deep: bool = True

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(4, name="first")(x)
        if self.deep:  # the layers a lighter configuration leaves out
            for i in range(4):
                x = nn.Dense(4, name=f"layer_{i}")(x)
        return x


def test_far_fewer_modules_than_the_parameters_hold_are_reported():
    variables = _Stack().init(jax.random.key(0), X)
    light = _Stack(deep=False)
    with pytest.warns(DTypeGuardWarning, match=r"checked only 2 of the model's 5 modules"):
        with guard(light, "float32", on_violation="record"):
            light.apply(variables, X)
    full = _Stack()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DTypeGuardWarning)
        with guard(full, "float32", on_violation="record") as g:
            full.apply(variables, X)
    assert g.modules_checked == 6


class F8Dense(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(4, dtype=BF16)(x)


def test_float8_params_are_named_and_reported():
    model = F8Dense()
    variables = model.init(jax.random.key(0), X)
    f8 = jax.tree.map(lambda p: p.astype(jnp.float8_e4m3fn), variables)
    with guard(model, "mixed_bfloat16", on_violation="record") as g:
        out = jax.jit(model.apply)(f8, X)
    assert out.dtype == BF16
    assert _codes(g) == [("DTL193", "(root)"), ("DTL391", "Dense_0"), ("DTL393", "Dense_0")]
    assert "parameters 'bias', 'kernel' are float8_e4m3fn, policy.params is float32" in [v.message for v in g.violations]
