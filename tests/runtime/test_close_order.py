"""Guards close in any order and leave nothing installed (two Flax, two torch guards)."""

import itertools

import pytest

from dtype_lint.runtime import guard

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
nn = pytest.importorskip("flax.linen")
from flax.linen import module as flax_module  # noqa: E402
from torch.nn.modules import module as torch_module  # noqa: E402

BF16 = jnp.bfloat16


class Widen(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.LayerNorm()(nn.Dense(4, dtype=BF16)(x))  # LayerNorm widens to float32


class Other(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.LayerNorm()(nn.Dense(3, dtype=BF16)(x))


def _torch_model():
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4)).to(torch.bfloat16)  # noqa: DTL303 (a deliberate hazard)


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))), ids=str)
def test_any_close_order_leaves_no_interceptor_or_hook(order):
    x = jnp.ones((2, 4), BF16)
    flax_models = [Widen(), Other()]
    variables = [m.init(jax.random.key(0), x) for m in flax_models]
    torch_models = [_torch_model(), _torch_model()]
    guards = [guard(m, "mixed_bfloat16", on_violation="record") for m in flax_models]
    guards += [guard(m, "float32", on_violation="record") for m in torch_models]
    for g in guards:
        g.__enter__()
    for index in order:
        # Every guard still open keeps checking, whatever was closed before it.
        for model, params in zip(flax_models, variables):
            model.apply(params, x)
        for model in torch_models:
            model(torch.ones(2, 4, dtype=torch.bfloat16))
        guards[index].close()
    assert len(flax_module._global_interceptor_stack) == 0
    assert all(not m._forward_hooks and not m._forward_pre_hooks and "forward" not in m.__dict__
               for model in torch_models for m in model.modules())
    assert not torch_module._global_forward_hooks
    # Each guard saw its own model only, on every call made while it was open.
    for position, g in enumerate(guards):
        calls = order.index(position) + 1
        assert g.violations, position
        assert all(v.count == calls for v in g.violations if v.code != "DTL193"), (position, g.violations)
    assert {v.module_path for v in guards[0].violations} == {"LayerNorm_0"}
    assert {v.code for v in guards[2].violations} == {"DTL391", "DTL191", "DTL193"}


@pytest.mark.parametrize("first", [0, 1])
def test_two_guards_on_one_torch_model_close_in_either_order(first):
    model = _torch_model()
    guards = [guard(model, "float32", on_violation="record") for _ in range(2)]
    for g in guards:
        g.__enter__()
    model(torch.ones(2, 4, dtype=torch.bfloat16))
    guards[first].close()
    model(torch.ones(2, 4, dtype=torch.bfloat16))
    guards[1 - first].close()
    assert all("forward" not in m.__dict__ for m in model.modules())
    assert [v.count for v in guards[first].violations if v.code == "DTL391"] == [1, 1]
    assert [v.count for v in guards[1 - first].violations if v.code == "DTL391"] == [2, 2]
