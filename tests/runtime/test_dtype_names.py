"""dtype_name reads a dtype by what it is, for every floating type the installed ml_dtypes has."""

import pytest

from dtype_lint.runtime.dtypes import dtype_name, is_floating, is_narrower_than_float32, mantissa_bits, width_bits

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")


def _ml_floating_types():
    """Every floating scalar type of the installed ml_dtypes, found from the package itself."""
    found = []
    for attr in sorted(dir(ml_dtypes)):
        value = getattr(ml_dtypes, attr)
        if isinstance(value, type) and issubclass(value, np.generic):
            try:
                info = ml_dtypes.finfo(value)
            except (TypeError, ValueError):
                continue  # int4 and friends
            if info.dtype == np.dtype(value):  # a complex type's finfo is its parts'
                found.append(value)
    return found


ML_FLOATS = _ml_floating_types()


def test_the_newest_ml_dtypes_has_what_these_tests_read():
    names = {np.dtype(t).name for t in ML_FLOATS}
    assert {"bfloat16", "float8_e4m3fn", "float8_e5m2"} <= names


@pytest.mark.parametrize("scalar_type", ML_FLOATS, ids=lambda t: np.dtype(t).name)
def test_every_ml_dtypes_float_is_named_measured_and_floating(scalar_type):
    info = ml_dtypes.finfo(scalar_type)
    name = np.dtype(scalar_type).name
    for form in (scalar_type, np.dtype(scalar_type), np.zeros(2, scalar_type)):
        assert dtype_name(form) == name
    assert is_floating(name)
    assert width_bits(name) == info.bits
    assert mantissa_bits(name) == info.nmant
    assert is_narrower_than_float32(name)


def test_jax_torch_and_numpy_forms():
    jnp = pytest.importorskip("jax.numpy")
    assert dtype_name(jnp.bfloat16) == dtype_name(jnp.ones(2, jnp.bfloat16)) == "bfloat16"
    assert dtype_name(jnp.float8_e4m3fn) == dtype_name(jnp.ones(2, jnp.float8_e4m3fn)) == "float8_e4m3fn"
    assert dtype_name(np.float32) == dtype_name(np.dtype("f4")) == "float32"
    assert dtype_name(float) == "float64"  # NumPy's reading of Python's float
    torch = pytest.importorskip("torch")
    assert dtype_name(torch.float8_e4m3fn) == "float8_e4m3fn"
    assert dtype_name(torch.ones(2, dtype=torch.bfloat16)) == "bfloat16"
    assert [mantissa_bits(n) for n in ("float64", "float32", "float16", "bfloat16")] == [52, 23, 10, 7]
    assert not is_floating("int32") and not is_floating("complex64") and not is_narrower_than_float32("int8")


def test_a_module_name_is_not_a_dtype():
    class Impostor:
        """Looks like NumPy's dtype by its module and name, and is none."""

        name = "float32"

    Impostor.__module__ = "numpy"
    with pytest.raises(ValueError, match="not a dtype"):
        dtype_name(Impostor())
    with pytest.raises(ValueError, match="not a dtype"):
        dtype_name(object())
