"""Measuring the precision a matmul really keeps, with probes whose exact result is known.

Two numbers describe a matmul: how many mantissa bits of each *input* survive
(TF32 keeps 10 of float32's 23, autocast to bf16 keeps 7) and how many bits the
*accumulator* keeps while summing products. Both are read from one matmul of
exactly representable values, so no tolerance is guessed:

* input bits: row ``k`` of ``A`` holds ``1 + 2**-k`` against a 1 in ``B`` (and the
  same in ``B`` against a 1 in ``A``); the product is exact unless the input was
  rounded, so the largest ``k`` that comes back unchanged is the number of bits kept;
* accumulator bits: row ``j`` sums ``big + big*2**-j - big``; the exact result
  ``big*2**-j`` is representable in every output dtype, but it only survives if the
  running sum kept ``j`` bits next to ``big``. The terms are placed twice, adjacent
  and far apart along K, so that blocked or lane-split summation orders are caught.

Results are cached per (framework, device, dtype, setting), where the setting is
everything in the current context that may change a matmul's precision.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from dtype_lint.runtime.dtypes import dtype_name, mantissa_bits

PROBE_DTYPES = ("float32", "bfloat16", "float16")
_M, _K, _N = 192, 128, 128
_ACC_MAX = 53
_ROW_B_SIDE = 23
_ROW_ACC = 24
# Far-apart positions along K for the second copy of the accumulator terms.
_FAR = (5, 64, 127)


class DeviceUnavailableError(RuntimeError):
    """The device a probe was asked to run on is not present (or not in this build)."""


def _check_torch_device(torch: Any, device: str) -> None:
    kind, _, index = device.partition(":")
    if kind != "cuda":
        return
    if not torch.cuda.is_available():
        why = "this torch build is CPU-only" if torch.version.cuda is None and torch.version.hip is None \
            else "no CUDA device is visible"
        raise DeviceUnavailableError(f"torch has no device {device!r}: torch.cuda.is_available() is False ({why})")
    if int(index or 0) >= torch.cuda.device_count():
        raise DeviceUnavailableError(f"torch has no device {device!r}: {torch.cuda.device_count()} CUDA device(s)")


@dataclasses.dataclass(frozen=True)
class MatmulPrecision:
    """Measured bits of one matmul configuration (mantissa bits, without the implicit 1)."""

    framework: str
    device: str
    dtype: str
    input_bits: int
    accumulator_bits: int
    setting: str
    #: Seconds the probe took, excluding ``compile_seconds``: the one-time XLA compile
    #: of the probe's matmul (JAX; 0 for torch, and for a program already compiled).
    seconds: float = dataclasses.field(default=0.0, compare=False)
    compile_seconds: float = dataclasses.field(default=0.0, compare=False)

    @property
    def effective_bits(self) -> int:
        return min(self.input_bits, self.accumulator_bits)


def _scale(dtype: str) -> tuple[int, int]:
    """``(big exponent, deepest j)`` that keep every probe value a normal number."""
    if dtype == "float16":
        return 15, 29
    return 0, _ACC_MAX


def probe_matrices(dtype: str):
    """The float64 NumPy matrices ``A`` (M×K), ``B`` (K×N) of the probe for ``dtype``."""
    import numpy as np

    bits = mantissa_bits(dtype)
    big_exp, acc_max = _scale(dtype)
    big = 2.0 ** big_exp
    a = np.zeros((_M, _K))
    b = np.zeros((_K, _N))
    for k in range(1, bits + 1):
        a[k - 1, 0] = 1 + 2.0 ** -k
        b[1, k] = 1 + 2.0 ** -k
    b[0, 0] = 1
    a[_ROW_B_SIDE, 1] = 1
    b[2:, 0] = 1
    for j in range(1, acc_max + 1):
        near = _ROW_ACC + j - 1
        far = _ROW_ACC + acc_max + j - 1
        a[near, 2:5] = (big, big * 2.0 ** -j, -big)
        a[far, list(_FAR)] = (big, big * 2.0 ** -j, -big)
    return a, b


def read_probe(c, dtype: str) -> tuple[int, int]:
    """``(input bits, accumulator bits)`` from the float64 result ``C = A @ B``."""
    bits = mantissa_bits(dtype)
    big_exp, acc_max = _scale(dtype)
    input_bits = 0
    for k in range(1, bits + 1):
        exact = 1 + 2.0 ** -k
        if c[k - 1, 0] != exact or c[_ROW_B_SIDE, k] != exact:
            break
        input_bits = k
    acc_bits = 0
    for j in range(1, acc_max + 1):
        exact = 2.0 ** (big_exp - j)
        if c[_ROW_ACC + j - 1, 0] != exact or c[_ROW_ACC + acc_max + j - 1, 0] != exact:
            break
        acc_bits = j
    return input_bits, acc_bits


def _torch_setting(torch: Any, device: str) -> str:
    device_type = device.split(":")[0]
    parts = [f"float32_matmul_precision={torch.get_float32_matmul_precision()}"]
    if torch.is_autocast_enabled(device_type):
        parts.append(f"autocast={dtype_name(torch.get_autocast_dtype(device_type))}")
    matmul = torch.backends.cuda.matmul
    for attr in ("allow_tf32", "fp32_precision", "allow_bf16_reduced_precision_reduction",
                 "allow_fp16_reduced_precision_reduction"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = getattr(matmul, attr, None)
        except RuntimeError as exc:  # torch refuses to read mixed legacy/new TF32 settings
            value = f"error({exc})"
        if value is not None:
            parts.append(f"cuda.matmul.{attr}={value}")
    mkldnn = getattr(getattr(torch.backends, "mkldnn", None), "matmul", None)
    if mkldnn is not None and hasattr(mkldnn, "fp32_precision"):
        parts.append(f"mkldnn.matmul.fp32_precision={mkldnn.fp32_precision}")
    return ",".join(parts)


def _jax_setting(jax: Any) -> str:
    return f"default_matmul_precision={getattr(jax.config, 'jax_default_matmul_precision')}"


def _run_torch(dtype: str, device: str, rounding: Callable | None):
    import torch

    a64, b64 = probe_matrices(dtype)
    torch_dtype = getattr(torch, dtype)
    a = torch.from_numpy(a64).to(device=device, dtype=torch_dtype)
    b = torch.from_numpy(b64).to(device=device, dtype=torch_dtype)
    if rounding is not None:
        a, b = rounding(a), rounding(b)
    c = torch.matmul(a, b)
    return c.to(device="cpu", dtype=torch.float64).numpy(), 0.0


def _jax_device(jax: Any, device: str):
    platform, _, index = device.partition(":")
    platform = {"cuda": "gpu", "rocm": "gpu"}.get(platform, platform)
    try:
        return jax.devices(platform)[int(index or 0)]
    except (RuntimeError, IndexError) as exc:
        raise DeviceUnavailableError(f"jax has no device {device!r}: {exc}") from None


def _run_jax(dtype: str, device: str, rounding: Callable | None):
    import jax
    import jax.numpy as jnp
    import numpy as np

    a64, b64 = probe_matrices(dtype)
    target = _jax_device(jax, device)
    jax_dtype = jnp.dtype(dtype)
    a = jax.device_put(a64.astype(jax_dtype), target)
    b = jax.device_put(b64.astype(jax_dtype), target)
    if rounding is not None:
        a, b = rounding(a), rounding(b)
    # Compiled explicitly, once per dtype, device and precision setting, so that the
    # compile (most of a first probe's time) is timed apart from the probe itself.
    key = (dtype, device, _jax_setting(jax))
    with _cache_lock:
        compiled = _compiled.get(key)
    compile_seconds = 0.0
    if compiled is None:
        start = time.perf_counter()
        compiled = jax.jit(jnp.matmul).lower(a, b).compile()
        compile_seconds = time.perf_counter() - start
        with _cache_lock:
            _compiled[key] = compiled
    c = compiled(a, b)
    # Convert on the host: a device-side astype would compile a second XLA program.
    return np.asarray(c).astype(np.float64), compile_seconds


_cache: dict[tuple[str, str, str, str], MatmulPrecision] = {}
_compiled: dict[tuple[str, str, str], Any] = {}
_cache_lock = threading.Lock()


def default_framework() -> str:
    """``"torch"`` if it is installed, else ``"jax"``."""
    import importlib.util

    return "torch" if importlib.util.find_spec("torch") is not None else "jax"


def matmul_precision(
    dtype: object = "float32",  # noqa: DTL101 (the dtype to measure, not to compute in)
    framework: str | None = None,
    device: str = "cpu",
    input_rounding: Callable[[Any], Any] | None = None,
) -> MatmulPrecision:
    """Measure the mantissa bits a ``dtype`` matmul keeps on ``device``, in the current context.

    ``framework`` is ``"torch"`` or ``"jax"`` (default: torch if installed). The
    current autocast state, ``torch.set_float32_matmul_precision``, the TF32 flags
    and ``jax.default_matmul_precision`` all apply. ``input_rounding`` (a function
    applied to both framework arrays before the matmul) simulates an input format,
    e.g. rounding float32 to TF32 by hand; results with it are not cached. A device
    that is absent raises :class:`DeviceUnavailableError` naming it.
    """
    name = dtype_name(dtype)
    if name not in PROBE_DTYPES:
        raise ValueError(f"matmul_precision probes {', '.join(PROBE_DTYPES)}, not {name}")
    framework = framework or default_framework()
    if framework == "torch":
        import torch

        _check_torch_device(torch, device)
        setting = _torch_setting(torch, device)
        run = _run_torch
    elif framework == "jax":
        import jax

        _jax_device(jax, device)
        setting = _jax_setting(jax)
        run = _run_jax
    else:
        raise ValueError(f"framework must be 'torch' or 'jax', got {framework!r}")
    key = (framework, device, name, setting)
    if input_rounding is None:
        with _cache_lock:
            cached = _cache.get(key)
        if cached is not None:
            return cached
    start = time.perf_counter()
    product, compile_seconds = run(name, device, input_rounding)
    input_bits, acc_bits = read_probe(product, name)
    seconds = time.perf_counter() - start - compile_seconds
    result = MatmulPrecision(framework, device, name, input_bits, acc_bits, setting, seconds, compile_seconds)
    if input_rounding is None:
        with _cache_lock:
            _cache[key] = result
    return result


def clear_cache() -> None:
    """Forget measured results (a new context is keyed separately; this is for tests)."""
    with _cache_lock:
        _cache.clear()
        _compiled.clear()
