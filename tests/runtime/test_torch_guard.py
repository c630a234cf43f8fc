"""guard() on real torch models (CPU): every check fires on a hazard and stays silent otherwise."""

import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

from dtype_lint.runtime import DTypeGuardWarning, DTypeViolationError, Policy, guard

torch = pytest.importorskip("torch")
from torch.nn.modules import module as torch_module  # noqa: E402

BF16 = torch.bfloat16


class RMSNorm(torch.nn.Module):
    """The widening bug seen in many ports: upcast for the reduction, never cast back."""

    def __init__(self, dim):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * x


class Block(torch.nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(self.norm(x).to(x.dtype))


def _tiny():
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 4))


def _codes(g):
    return sorted((v.code, v.module_path) for v in g.violations)


def _nothing_installed(model):
    return (all(not m._forward_hooks and not m._forward_pre_hooks and "forward" not in m.__dict__
                for m in model.modules())
            and not torch_module._global_forward_hooks and not torch_module._global_forward_pre_hooks)


def test_correct_float32_model_is_silent():
    model = _tiny()
    with guard(model, "float32") as g:
        out = model(torch.randn(2, 8))
    assert out.dtype == torch.float32
    assert g.violations == []
    assert _nothing_installed(model)


def test_param_dtype_DTL391():
    model = _tiny()
    model[1].to(torch.float16)  # a half LayerNorm inside a float32 model
    # The failed forward reached one module of four: the guard says so on exit, and why.
    with pytest.warns(DTypeGuardWarning, match="checked only 1 of the model's 4 modules; likely: a call of the "
                                               "model raised before it reached the others$"):
        with guard(model, "float32", on_violation="record") as g:
            model[0](torch.randn(2, 8))
            with pytest.raises(RuntimeError):
                model(torch.randn(2, 8))  # float16 LayerNorm rejects float32 input
    # Reported although the forward failed: parameters are checked before the call.
    assert _codes(g) == [("DTL391", "1")]
    assert g.violations[0].message == "parameters 'bias', 'weight' are float16, policy.params is float32"


class Residual(torch.nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = torch.nn.Linear(dim, dim)

    def forward(self, x):
        return x + self.fc(x)


def test_autocast_residual_and_final_output_DTL191_DTL193():
    model = torch.nn.Sequential(Residual(), torch.nn.Linear(8, 4))
    with guard(model, "mixed_bfloat16", on_violation="record") as g:
        with torch.autocast("cpu", dtype=BF16):
            out = model(torch.randn(2, 8))
    # Under autocast the Linear returns bfloat16, and adding the float32 residual
    # stream promotes the block's output back to float32; the head returns bfloat16.
    assert out.dtype == BF16
    assert _codes(g) == [("DTL191", "0"), ("DTL193", "(root)")]
    by_code = {v.code: v.message for v in g.violations}
    assert by_code["DTL191"] == ("Residual returned float32 activations from inputs float32 "
                                 "(the model's own inputs), policy.compute is bfloat16")
    assert by_code["DTL193"] == "output is bfloat16, expected float32"


def test_autocast_model_following_the_policy_is_silent():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 4))

        def forward(self, x):
            with torch.autocast("cpu", dtype=BF16):
                return self.body(x).float()

    model = Net()
    with guard(model, "params=f32,compute=bf16,output=f32") as g:
        assert model(torch.randn(2, 8)).dtype == torch.float32
    assert g.violations == []


def test_silent_widening_DTL192_and_not_on_the_fixed_module():
    model = Block().to(BF16)
    with guard(model, "bfloat16", on_violation="record") as g:
        out = model(torch.randn(2, 8, dtype=BF16))
    assert out.dtype == BF16
    assert _codes(g) == [("DTL192", "norm")]
    assert g.violations[0].message == "RMSNorm returned float32 from inputs bfloat16 and params bfloat16"
    with pytest.raises(DTypeViolationError, match="DTL192 norm"):
        g.assert_clean()

    class FixedRMSNorm(RMSNorm):
        def forward(self, x):
            return super().forward(x).to(x.dtype)

    model.norm = FixedRMSNorm(8).to(BF16)
    with guard(model, "bfloat16", on_violation="record") as g:
        model(torch.randn(2, 8, dtype=BF16))
    assert g.violations == []
    g.assert_clean()


@pytest.mark.parametrize(
    ("output", "input_dtype", "expected"),
    [
        ("input", BF16, []),
        ("input", torch.float32, [("DTL193", "(root)")]),
        ("default", BF16, [("DTL193", "(root)")]),
        ("compute", BF16, []),
        ("float32", BF16, [("DTL193", "(root)")]),
    ],
)
def test_output_conventions(output, input_dtype, expected):
    # A wrapper that leaves outputs as computed: bfloat16 whatever the input.
    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.nn.Linear(4, 4).to(BF16)

        def forward(self, x):
            return self.inner(x.to(BF16))

    model = Wrapper()
    policy = Policy(params="bfloat16", compute="bfloat16", output=output)
    with guard(model, policy, on_violation="record") as g:
        model(torch.randn(2, 4, dtype=input_dtype))
    assert _codes(g) == expected


def test_output_input_with_mixed_inputs_names_them():
    class Add(torch.nn.Module):
        def forward(self, a, b):
            return a + b

    model = Add()
    with guard(model, "c=f32,o=input", on_violation="record") as g:
        model(torch.ones(2), b=torch.ones(2, dtype=BF16))
    assert [v.message for v in g.violations] == [
        "output='input' but the floating inputs have mixed dtypes: bfloat16, float32"]


def test_raise_mode_raises_in_the_call_and_cleans_up():
    model = Block().to(BF16)
    with pytest.raises(DTypeViolationError, match="DTL192 norm"):
        with guard(model, "bfloat16"):
            model(torch.randn(2, 8, dtype=BF16))
    assert isinstance(DTypeViolationError([]), AssertionError)
    assert _nothing_installed(model)


def test_exception_in_body_removes_everything():
    model = _tiny()
    with pytest.raises(KeyError):
        with guard(model, "float32"):
            assert not _nothing_installed(model)
            raise KeyError("boom")
    assert _nothing_installed(model)


def test_warn_mode_warns_once_per_distinct_violation():
    model = Block().to(BF16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with guard(model, "bfloat16", on_violation="warn") as g:
            for _ in range(3):
                model(torch.randn(2, 8, dtype=BF16))
    relevant = [w for w in caught if issubclass(w.category, DTypeGuardWarning)]
    assert len(relevant) == 1 and "DTL192 norm" in str(relevant[0].message)
    assert g._recorder.count(g.violations[0]) == 3


def test_bad_arguments():
    with pytest.raises(TypeError):
        guard(object(), "float32")
    with pytest.raises(ValueError):
        guard(_tiny(), "float32", on_violation="explode")
    with pytest.raises(ValueError, match="bf17"):
        guard(_tiny(), "c=bf17")


def test_threads_record_correctly_and_leave_nothing_installed():
    torch.manual_seed(0)
    model = Block().to(BF16)
    clean = _tiny()

    def call(index):
        if index % 2:
            return model(torch.randn(4, 8, dtype=BF16)).dtype
        return clean(torch.randn(4, 8)).dtype

    with guard(model, "bfloat16", on_violation="record") as g_model, \
            guard(clean, "float32", on_violation="record") as g_clean:
        with ThreadPoolExecutor(max_workers=8) as pool:
            dtypes = list(pool.map(call, range(64)))
    assert dtypes.count(BF16) == 32 and dtypes.count(torch.float32) == 32
    assert _codes(g_model) == [("DTL192", "norm")]
    assert g_model._recorder.count(g_model.violations[0]) == 32
    assert g_clean.violations == []
    assert _nothing_installed(model) and _nothing_installed(clean)


def test_transformer_encoder_paths():
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    model.layers[1].linear1.to(torch.float16)
    with guard(model, "float32", on_violation="record") as g:
        with pytest.raises(RuntimeError):
            model(torch.randn(2, 3, 8))
    assert {v.module_path for v in g.violations if v.code == "DTL391"} == {"layers.1.linear1"}


def test_wrapped_forward_keeps_its_signature_and_other_wrappers_survive_close():
    import inspect

    model = Block()
    signature = inspect.signature(model.forward)
    with pytest.warns(DTypeGuardWarning, match="checked no module call"):
        with guard(model, "float32", on_violation="record") as g:
            assert inspect.signature(model.forward) == signature
            guarded = model.forward

            def outer(*args, **kwargs):  # another library wraps forward while the guard is active
                return guarded(*args, **kwargs)

            model.forward = outer
    # The guard cannot unwrap under the other wrapper: it leaves itself as a pass-through.
    assert model.forward is outer
    model(torch.randn(2, 8))
    assert g.violations == [] and g.modules_checked == 0
    del model.forward
    assert _nothing_installed(model)
