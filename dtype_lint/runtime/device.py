"""``device_report()``: what each installed framework and device does with low precision.

For every framework that is installed (torch, JAX) and every device it sees (CPU,
CUDA GPUs, TPUs): the device's name and compute capability, which dtypes it supports
natively, the settings that silently change float32 matmuls (TF32, default matmul
precision, x64) and the *measured* precision of float32, bfloat16 and float16 matmuls
(:mod:`dtype_lint.runtime.probe`). A framework that is not installed is reported as
absent; a probe that fails is reported with its error instead of aborting the report.
"""

from __future__ import annotations

import importlib
import platform
import warnings
from typing import Any

from dtype_lint.runtime.probe import PROBE_DTYPES, matmul_precision


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _cpu_native() -> dict[str, bool | None]:
    """Native arithmetic support read from CPU flags (x86: AVX512/AMX; Arm: bf16/fphp)."""
    flags = _cpu_flags()
    if not flags:
        return {"bfloat16": None, "float16": None, "float64": True, "float8": None}
    return {
        "bfloat16": bool(flags & {"avx512_bf16", "amx_bf16", "bf16"}),
        "float16": bool(flags & {"avx512_fp16", "amx_fp16", "fphp", "asimdhp"}),
        "float64": True,
        "float8": False,
    }


def _read(getter) -> Any:
    """A setting's value, or the error text: newer torch raises when legacy and new TF32 APIs are mixed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getter()
    except Exception as exc:
        return f"error: {type(exc).__name__}: {exc}"


def _measure(framework: str, device: str) -> dict[str, Any]:
    measured: dict[str, Any] = {}
    for dtype in PROBE_DTYPES:
        try:
            result = matmul_precision(dtype, framework=framework, device=device)
            measured[dtype] = {"input_bits": result.input_bits,
                               "accumulator_bits": result.accumulator_bits,
                               "probe_ms": round(result.seconds * 1e3, 1),
                               "compile_ms": round(result.compile_seconds * 1e3, 1)}
        except Exception as exc:
            measured[dtype] = {"error": f"{type(exc).__name__}: {exc}"}
    return measured


def _torch_settings(torch: Any) -> dict[str, Any]:
    backends = torch.backends
    settings = {
        "torch.backends.cuda.matmul.allow_tf32": _read(lambda: backends.cuda.matmul.allow_tf32),
        "torch.backends.cudnn.allow_tf32": _read(lambda: backends.cudnn.allow_tf32),
        "torch.get_float32_matmul_precision()": _read(torch.get_float32_matmul_precision),
        "torch.get_default_dtype()": str(torch.get_default_dtype()),
    }
    newer = {
        "torch.backends.fp32_precision": lambda: backends.fp32_precision,
        "torch.backends.cuda.matmul.fp32_precision": lambda: backends.cuda.matmul.fp32_precision,
        "torch.backends.cudnn.fp32_precision": lambda: backends.cudnn.fp32_precision,
        "torch.backends.cudnn.conv.fp32_precision": lambda: backends.cudnn.conv.fp32_precision,
        "torch.backends.mkldnn.matmul.fp32_precision": lambda: backends.mkldnn.matmul.fp32_precision,
    }
    for name, getter in newer.items():
        value = _read(getter)
        if not (isinstance(value, str) and value.startswith("error: AttributeError")):
            settings[name] = value
    return settings


_GPU_SETTINGS = ("torch.backends.cuda.", "torch.backends.cudnn.")


def _torch_cuda_native(torch: Any, index: int) -> dict[str, Any]:
    major, minor = torch.cuda.get_device_capability(index)
    with torch.cuda.device(index):
        bf16 = _read(lambda: torch.cuda.is_bf16_supported(including_emulation=False))
    is_rocm = torch.version.hip is not None
    return {
        "bfloat16": bf16,
        "float16": is_rocm or (major, minor) >= (5, 3),
        "float64": True,
        # Hardware FP8 matmul: Ada (8.9) and Hopper (9.0) and later on NVIDIA.
        "float8": None if is_rocm else (major, minor) >= (8, 9),
    }


def _torch_report() -> dict[str, Any]:
    import torch

    devices = [{
        "platform": "cpu",
        "device": "cpu",
        "name": _cpu_name(),
        "compute_capability": None,
        "cpu_capability": _read(torch.backends.cpu.get_cpu_capability),
        "native": _cpu_native(),
        "matmul": _measure("torch", "cpu"),
    }]
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            major, minor = torch.cuda.get_device_capability(index)
            devices.append({
                "platform": "rocm" if torch.version.hip is not None else "cuda",
                "device": f"cuda:{index}",
                "name": torch.cuda.get_device_name(index),
                "compute_capability": f"{major}.{minor}",
                "native": _torch_cuda_native(torch, index),
                "matmul": _measure("torch", f"cuda:{index}"),
            })
    # Settings of the CUDA and cuDNN backends change nothing in a build without them.
    cpu_only = torch.version.cuda is None and torch.version.hip is None
    inert = [key for key in _torch_settings(torch) if cpu_only and key.startswith(_GPU_SETTINGS)]
    return {"available": True, "version": torch.__version__, "cpu_only_build": cpu_only,
            "settings": _torch_settings(torch), "inert_settings": inert, "devices": devices}


def _jax_native(device: Any) -> dict[str, Any]:
    if device.platform == "cpu":
        return _cpu_native()
    if device.platform == "tpu":
        # TPUs compute bf16 natively; float16 and float64 are emulated by XLA.
        return {"bfloat16": True, "float16": False, "float64": False, "float8": None}
    capability = getattr(device, "compute_capability", None)
    try:
        major, minor = (int(x) for x in str(capability).split(".")[:2])
    except ValueError:
        return {"bfloat16": None, "float16": None, "float64": True, "float8": None}
    return {"bfloat16": major >= 8, "float16": (major, minor) >= (5, 3), "float64": True,
            "float8": (major, minor) >= (8, 9)}


def _jax_report() -> dict[str, Any]:
    import jax

    devices = []
    for backend in ("cpu", "gpu", "tpu"):
        try:
            found = jax.devices(backend)
        except RuntimeError:  # backend not present
            continue
        for index, device in enumerate(found):
            name = f"{backend}:{index}"
            devices.append({
                "platform": device.platform,
                "device": name,
                "name": device.device_kind if backend != "cpu" else _cpu_name(),
                "compute_capability": getattr(device, "compute_capability", None),
                "native": _jax_native(device),
                "matmul": _measure("jax", name),
            })
    settings = {
        "jax_enable_x64": bool(getattr(jax.config, "jax_enable_x64")),
        "jax_default_matmul_precision": getattr(jax.config, "jax_default_matmul_precision"),
        "default_backend": jax.default_backend(),
    }
    return {"available": True, "version": jax.__version__, "settings": settings, "devices": devices}


_FRAMEWORKS = {"torch": _torch_report, "jax": _jax_report}


def device_report(frameworks: tuple[str, ...] = ("torch", "jax")) -> dict[str, Any]:
    """A JSON-serialisable report per framework: version, settings and devices."""
    report: dict[str, Any] = {"python": platform.python_version(), "frameworks": {}}
    for name in frameworks:
        try:
            importlib.import_module(name)
        except ImportError:
            report["frameworks"][name] = {"available": False, "reason": "not installed"}
            continue
        try:
            report["frameworks"][name] = _FRAMEWORKS[name]()
        except Exception as exc:
            report["frameworks"][name] = {"available": False,
                                          "reason": f"{type(exc).__name__}: {exc}"}
    return report


def format_report(report: dict[str, Any]) -> str:
    """The human-readable form printed by ``dtype-lint device``."""
    lines = []
    for framework, info in report["frameworks"].items():
        if not info.get("available"):
            lines.append(f"{framework}: absent ({info.get('reason')})")
            lines.append("")
            continue
        lines.append(f"{framework} {info['version']}"
                     + (" (CPU-only build)" if info.get("cpu_only_build") else ""))
        inert = set(info.get("inert_settings", ()))
        for key, value in info["settings"].items():
            lines.append(f"  {key} = {value}" + ("  (no effect: CPU-only build)" if key in inert else ""))
        for device in info["devices"]:
            capability = device.get("compute_capability")
            cpu_capability = device.get("cpu_capability")
            lines.append(f"  [{device['device']}] {device['name']}"
                         + (f" (compute capability {capability})" if capability else "")
                         + (f" (CPU capability {cpu_capability})" if cpu_capability else ""))
            native = ", ".join(
                f"{dtype} {'yes' if ok else 'no' if ok is False else 'unknown'}"
                for dtype, ok in device["native"].items()
            )
            lines.append(f"    native: {native}")
            for dtype, measured in device["matmul"].items():
                if "error" in measured:
                    lines.append(f"    {dtype} matmul: probe failed: {measured['error']}")
                else:
                    timing = f"probe {measured['probe_ms']:.0f} ms"
                    if measured["compile_ms"]:
                        timing += f", one-time compile {measured['compile_ms']:.0f} ms"
                    lines.append(f"    {dtype} matmul: input {measured['input_bits']} bits, "
                                 f"accumulator {measured['accumulator_bits']} bits ({timing})")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
