"""The matmul precision probe reads known bit counts on the CPU, and follows the current context."""

import time

import pytest

from dtype_lint.runtime import DeviceUnavailableError, matmul_precision
from dtype_lint.runtime.probe import clear_cache, probe_matrices, read_probe

np = pytest.importorskip("numpy")


def _round_mantissa(bits):
    """A NumPy rounding (nearest, ties to even) of float64 values to ``bits`` mantissa bits."""
    def rounding(values):
        mantissa, exponent = np.frexp(values)
        scale = 2.0 ** (bits + 1)
        return np.ldexp(np.round(mantissa * scale) / scale, exponent)

    return rounding


@pytest.mark.parametrize(("dtype", "bits"), [("float32", 23), ("bfloat16", 7), ("float16", 10)])
def test_read_probe_on_exact_and_rounded_products(dtype, bits):
    a, b = probe_matrices(dtype)
    # NumPy sums in float64 (52 bits); the float16 probe stops at 29 bits to stay normal.
    assert read_probe(a @ b, dtype) == (bits, 52 if dtype != "float16" else 29)
    kept = _round_mantissa(bits - 3)
    assert read_probe(kept(a) @ kept(b), dtype)[0] == bits - 3


def test_read_probe_sees_a_narrow_accumulator():
    a, b = probe_matrices("float32")
    # Sequential summation with a 10-bit accumulator, done by hand.
    keep = _round_mantissa(10)
    c = np.zeros((a.shape[0], b.shape[1]))
    for k in range(a.shape[1]):
        c = keep(c + np.outer(a[:, k], b[k, :]))
    assert read_probe(c, "float32")[1] == 10


torch = pytest.importorskip("torch")


def tf32_round(tensor):
    """Round float32 to TF32 (10 mantissa bits, nearest-even) by hand, as tensor cores do."""
    bits = tensor.view(torch.int32)
    bits = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
    return bits.view(torch.float32)


@pytest.mark.parametrize(("dtype", "bits"), [("float32", 23), ("bfloat16", 7), ("float16", 10)])
def test_torch_cpu_reads_known_bits(dtype, bits):
    clear_cache()
    start = time.perf_counter()
    result = matmul_precision(dtype, framework="torch", device="cpu")
    elapsed = time.perf_counter() - start
    assert result.input_bits == bits
    assert result.accumulator_bits == 23  # the CPU kernels accumulate in float32
    assert elapsed < 0.1
    assert matmul_precision(dtype, framework="torch", device="cpu") is result  # cached


def test_torch_detects_tf32_input_rounding_by_hand():
    result = matmul_precision("float32", framework="torch", input_rounding=tf32_round)
    assert (result.input_bits, result.accumulator_bits) == (10, 23)


def test_torch_follows_autocast():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        result = matmul_precision("float32", framework="torch")
    assert result.input_bits == 7 and "autocast=bfloat16" in result.setting
    assert matmul_precision("float32", framework="torch").input_bits == 23


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_torch_cuda_tf32_setting_is_measured():
    previous = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        assert matmul_precision("float32", framework="torch", device="cuda:0").input_bits == 23
        torch.set_float32_matmul_precision("high")
        major, _ = torch.cuda.get_device_capability(0)
        expected = 10 if major >= 8 else 23  # TF32 tensor cores from Ampere on
        assert matmul_precision("float32", framework="torch", device="cuda:0").input_bits == expected
    finally:
        torch.set_float32_matmul_precision(previous)
    assert matmul_precision("bfloat16", framework="torch", device="cuda:0").input_bits == 7


def test_bad_dtype():
    with pytest.raises(ValueError):
        matmul_precision("float64")
    with pytest.raises(ValueError):
        matmul_precision("float32", framework="tensorflow")


def test_jax_cpu_reads_known_bits_and_follows_the_context():
    jax = pytest.importorskip("jax")
    for dtype, bits in (("float32", 23), ("bfloat16", 7), ("float16", 10)):
        result = matmul_precision(dtype, framework="jax", device="cpu")
        assert (result.input_bits, result.accumulator_bits) == (bits, 23)
    with jax.default_matmul_precision("bfloat16"):
        inside = matmul_precision("float32", framework="jax", device="cpu")
    assert "default_matmul_precision=bfloat16" in inside.setting
    # XLA:CPU ignores the precision hint and keeps float32; what matters is it was measured.
    assert inside.input_bits == 23


def _jax_devices(platform):
    jax = pytest.importorskip("jax")
    try:
        return jax.devices(platform)
    except RuntimeError:
        return []


@pytest.mark.skipif(not _jax_devices("tpu"), reason="no TPU")
def test_jax_tpu_default_precision_is_bf16_passes():
    jax = pytest.importorskip("jax")
    with jax.default_matmul_precision("highest"):
        assert matmul_precision("float32", framework="jax", device="tpu:0").input_bits >= 20
    with jax.default_matmul_precision("bfloat16"):
        assert matmul_precision("float32", framework="jax", device="tpu:0").input_bits == 7


@pytest.mark.skipif(not _jax_devices("gpu"), reason="no GPU for JAX")
def test_jax_gpu_probe_runs():
    jax = pytest.importorskip("jax")
    with jax.default_matmul_precision("highest"):
        assert matmul_precision("float32", framework="jax", device="gpu:0").input_bits == 23
    assert matmul_precision("bfloat16", framework="jax", device="gpu:0").input_bits == 7


def test_jax_compile_is_timed_apart_and_done_once():
    pytest.importorskip("jax")
    clear_cache()
    first = matmul_precision("bfloat16", framework="jax")
    assert first.compile_seconds > 0 and first.seconds > 0
    # Not cached as a result (a rounding of one's own), but the compiled program is reused.
    again = matmul_precision("bfloat16", framework="jax", input_rounding=lambda a: a)
    assert again.compile_seconds == 0 and again.input_bits == first.input_bits == 7


def test_an_absent_device_is_named():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(DeviceUnavailableError, match="torch has no device 'cuda'"):
        matmul_precision("float32", framework="torch", device="cuda")
    with pytest.raises(DeviceUnavailableError, match="torch has no device 'cuda:0'"):
        matmul_precision("float32", framework="torch", device="cuda:0")
