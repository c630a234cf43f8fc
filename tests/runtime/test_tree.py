"""check_tree / assert_tree_dtypes on every kind of tree they accept."""

import dataclasses

import pytest

from dtype_lint.runtime import Policy, TreeDTypeError, assert_tree_dtypes, check_tree

np = pytest.importorskip("numpy")


def _paths(mismatches):
    return sorted(m.path for m in mismatches)


def test_nested_containers_and_numpy_skip_non_floating():
    @dataclasses.dataclass
    class State:
        weights: dict
        step: object

    tree = State(weights={"a": [np.zeros(2, np.float16), np.zeros(2, np.float32)], "b": (np.arange(3),)},
                 step=np.int64(3))
    found = check_tree(tree, "float32")
    assert [(m.path, m.expected, m.actual, m.code) for m in found] == [
        ("weights/a/0", "float32", "float16", "DTL391")]
    assert check_tree(np.zeros(3, np.float64), np.float64) == []
    assert _paths(check_tree(np.zeros(3, np.float64), "f32")) == ["<root>"]


def test_torch_module_parameters_and_buffers_and_state_dict():
    torch = pytest.importorskip("torch")
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    encoder = torch.nn.ModuleDict({"encoder": torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)})
    encoder.register_buffer("scale", torch.ones(2, dtype=torch.float16))
    encoder.register_buffer("counter", torch.zeros(1, dtype=torch.int64))
    encoder.encoder.layers[0].linear1.to(torch.bfloat16)
    found = check_tree(encoder, Policy.parse("mixed_bfloat16"))
    assert _paths(found) == ["encoder.layers.0.linear1.bias", "encoder.layers.0.linear1.weight", "scale"]
    assert _paths(check_tree(encoder.state_dict(), torch.float32)) == _paths(found)
    assert check_tree(encoder.to(torch.bfloat16), "bf16") == []


def test_flax_variables_frozendict_and_recast():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    nn = pytest.importorskip("flax.linen")
    from flax.core import freeze

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(nn.Dense(3)(x))

    variables = Net().init(jax.random.key(0), jnp.ones((1, 4)))
    assert check_tree(variables, "float32") == []
    recast = jax.tree.map(lambda p: p.astype(jnp.bfloat16), variables)
    expected = ["params/Dense_0/bias", "params/Dense_0/kernel", "params/Dense_1/bias", "params/Dense_1/kernel"]
    assert _paths(check_tree(recast, "float32")) == expected
    assert _paths(check_tree(freeze(recast), jnp.float32)) == expected
    assert check_tree(recast, jnp.bfloat16) == []


def test_jax_pytree_optimizer_state():
    jnp = pytest.importorskip("jax.numpy")
    optax = pytest.importorskip("optax")
    params = {"w": jnp.ones((2, 2), jnp.bfloat16)}
    state = optax.adam(1e-3).init(params)
    paths = _paths(check_tree(state, "float32"))
    assert paths == ["0/mu/w", "0/nu/w"]  # the int32 step count is skipped


def test_assert_lists_every_mismatch():
    tree = {"a": np.zeros(1, np.float16), "b": np.zeros(1, np.float64), "c": np.zeros(1, np.float32)}
    with pytest.raises(AssertionError) as info:
        assert_tree_dtypes(tree, "float32")
    assert isinstance(info.value, TreeDTypeError)
    assert _paths(info.value.mismatches) == ["a", "b"]
    assert "a: expected float32, got float16" in str(info.value)
    assert "b: expected float32, got float64" in str(info.value)
    assert [v.code for v in info.value.violations] == ["DTL391", "DTL391"]
    assert str(info.value).startswith("2 floating leaves are not float32:\n")
    assert_tree_dtypes({"c": tree["c"]}, "float32")
    with pytest.raises(TreeDTypeError) as info:
        assert_tree_dtypes({"a": tree["a"]}, "float32")
    assert str(info.value) == "1 floating leaf is not float32:\n  DTL391 a: expected float32, got float16"


def test_expected_must_be_floating():
    with pytest.raises(ValueError):
        check_tree({}, "int32")


def test_bfloat16_and_float8_jax_arrays_are_reported():
    jnp = pytest.importorskip("jax.numpy")
    tree = {"w": jnp.ones(2, jnp.bfloat16), "f8": jnp.ones(2, jnp.float8_e4m3fn), "ok": jnp.ones(2)}
    found = {m.path: m.actual for m in check_tree(tree, "float32")}
    assert found == {"w": "bfloat16", "f8": "float8_e4m3fn"}
    assert _paths(check_tree(tree, jnp.float8_e4m3fn)) == ["ok", "w"]


def test_a_dtype_that_cannot_be_read_is_a_mismatch_not_a_skip():
    class Odd:
        dtype = object()  # has a dtype, of no kind any framework here knows

    [mismatch] = check_tree({"odd": Odd(), "fine": np.zeros(1, np.float32)}, "float32")
    assert mismatch.path == "odd" and mismatch.actual.startswith("unreadable dtype")
    with pytest.raises(TreeDTypeError, match="odd: expected float32, got unreadable dtype"):
        assert_tree_dtypes({"odd": Odd()}, "float32")


def test_an_nnx_module_and_its_state_name_each_leaf_alike():
    nnx = pytest.importorskip("flax.nnx")
    jnp = pytest.importorskip("jax.numpy")

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 3, param_dtype=jnp.bfloat16, rngs=rngs)
            self.norm = nnx.BatchNorm(3, rngs=rngs)

    net = Net(nnx.Rngs(0))
    found = check_tree(net, "float32")
    assert _paths(found) == ["linear/bias", "linear/kernel"]
    assert check_tree(nnx.state(net), "float32") == found
    assert _paths(check_tree({"model": net}, "float32")) == ["model/linear/bias", "model/linear/kernel"]


def test_a_module_is_never_a_leaf_whatever_dtype_it_carries():
    nnx = pytest.importorskip("flax.nnx")
    jnp = pytest.importorskip("jax.numpy")
    # Computes in bfloat16, holds float32 parameters: the parameters are the leaves.
    linear = nnx.Linear(2, 3, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
    assert check_tree(linear, "float32") == []
    assert _paths(check_tree(linear, "bfloat16")) == ["bias", "kernel"]
    torch = pytest.importorskip("torch")

    class Pretrained(torch.nn.Linear):  # a Hugging Face model has a `dtype` property
        dtype = torch.bfloat16

    assert _paths(check_tree(Pretrained(2, 2), "bfloat16")) == ["bias", "weight"]
