"""Exercise dtype_lint.runtime on whatever accelerator this machine has, in one run.

Prints the device report, then for every torch and JAX device: the measured matmul
precision under each precision setting (TF32 on/off, autocast, JAX default matmul
precision), and runs the guard, the tree check and the pickling check on a small
model placed on that device. On each CUDA device it also sets TF32 on and off through
both torch APIs (``allow_tf32`` and ``fp32_precision``) and checks what
``matmul_precision`` measures, and runs the benchmark's third-party models (timm
resnet18 and vit_tiny, tiny Hugging Face Bert and Llama, where installed) under CUDA
autocast bf16 and fp16 with the autocast presets (expected: no finding) and times the
guard's overhead there. Each step prints PASS/FAIL with its numbers; the exit status
is the number of failed steps. Meant to finish well under 5 minutes.

Run: ``python scripts/device_check.py``.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

from dtype_lint.runtime import (
    assert_tree_dtypes,
    check_picklable,
    check_tree,
    device_report,
    format_report,
    guard,
    matmul_precision,
)

FAILURES: list[str] = []


def step(name: str, body: Callable[[], str]) -> None:
    start = time.perf_counter()
    try:
        detail = body()
        print(f"PASS {name} ({time.perf_counter() - start:.2f}s): {detail}")
    except Exception:
        FAILURES.append(name)
        print(f"FAIL {name}:\n{traceback.format_exc()}")


def _bits(result) -> str:
    return f"input {result.input_bits}, accumulator {result.accumulator_bits}"


def torch_checks() -> None:
    import torch

    devices = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    for device in devices:
        kind = device.split(":")[0]

        def precisions(device=device, kind=kind) -> str:
            lines = []
            previous = torch.get_float32_matmul_precision()
            try:
                for setting in ("highest", "high", "medium"):
                    torch.set_float32_matmul_precision(setting)
                    lines.append(f"f32[{setting}] {_bits(matmul_precision('float32', 'torch', device))}")
            finally:
                torch.set_float32_matmul_precision(previous)
            for dtype in ("bfloat16", "float16"):
                lines.append(f"{dtype} {_bits(matmul_precision(dtype, 'torch', device))}")
                with torch.autocast(kind, dtype=getattr(torch, dtype)):
                    lines.append(f"f32 under autocast({dtype}) "
                                 f"{_bits(matmul_precision('float32', 'torch', device))}")
            return "; ".join(lines)

        step(f"torch {device} matmul precision", precisions)

        def guarded(device=device, kind=kind) -> str:
            class Residual(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = torch.nn.Linear(64, 64)

                def forward(self, x):
                    return x + self.fc(x)

            model = torch.nn.Sequential(Residual(), torch.nn.LayerNorm(64), torch.nn.Linear(64, 8)).to(device)
            x = torch.randn(16, 64, device=device)
            with guard(model, "mixed_bfloat16", on_violation="record") as g:
                with torch.autocast(kind, dtype=torch.bfloat16):
                    model(x)
            codes = sorted({(v.code, v.module_path) for v in g.violations})
            assert ("DTL193", "(root)") in codes, codes
            assert all(not m._forward_hooks for m in model.modules())
            assert check_tree(model, "float32") == []
            assert len(check_tree(model.to(torch.bfloat16), "float32")) == 6  # noqa: DTL303 (a deliberate hazard)
            return f"violations {codes}"

        step(f"torch {device} guard + check_tree", guarded)

    def pickling() -> str:
        model = torch.nn.Sequential(torch.nn.Linear(2, 2))
        model.act = lambda x: x  # noqa: DTL204 (a deliberate hazard)
        problems = check_picklable(model, "model")
        assert [p.path for p in problems] == ["model.act"], problems
        return str(problems[0])

    step("torch check_picklable", pickling)
    for index in range(torch.cuda.device_count()):
        cuda_checks(torch, f"cuda:{index}")


def _tf32_bits(torch, device: str, api: str, on: bool) -> int:
    matmul = torch.backends.cuda.matmul
    if api == "allow_tf32":
        previous = matmul.allow_tf32
        matmul.allow_tf32 = on
    else:
        previous = matmul.fp32_precision
        matmul.fp32_precision = "tf32" if on else "ieee"
    try:
        return matmul_precision("float32", "torch", device).input_bits
    finally:
        setattr(matmul, api, previous)


def cuda_checks(torch, device: str) -> None:
    major, _ = torch.cuda.get_device_capability(device)

    def tf32() -> str:
        lines = []
        for api in ("allow_tf32", "fp32_precision"):
            if not hasattr(torch.backends.cuda.matmul, api):
                lines.append(f"{api}: not in this torch")
                continue
            on, off = _tf32_bits(torch, device, api, True), _tf32_bits(torch, device, api, False)
            assert off == 23, (api, off)
            # TF32 exists from Ampere (compute capability 8) on; before, the flag does nothing.
            assert on == (10 if major >= 8 else 23), (api, on)
            lines.append(f"{api}: on {on} bits, off {off} bits")
        return "; ".join(lines)

    step(f"torch {device} TF32 through both APIs", tf32)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import guard_overhead

    models = guard_overhead.third_party_models(torch)
    for name, (model, inputs) in models.items():
        model = model.to(device)
        inputs = tuple(t.to(device) for t in inputs)
        for dtype in ("bfloat16", "float16"):
            def autocast_run(model=model, inputs=inputs, dtype=dtype) -> str:
                with guard(model, f"autocast_{dtype}", on_violation="record") as g:
                    with torch.no_grad(), torch.autocast("cuda", dtype=getattr(torch, dtype)):
                        model(*inputs)
                assert g.violations == [], [str(v) for v in g.violations]
                return f"{g.modules_checked} modules checked, no finding"

            step(f"torch {device} {name} autocast {dtype}", autocast_run)

        def overhead(model=model, inputs=inputs) -> str:
            def call():
                with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                    model(*inputs)
                torch.cuda.synchronize(device)

            call()
            active = guard(model, "autocast_bfloat16", on_violation="record")
            samples: dict[str, list[float]] = {"off": [], "on": []}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for repeat in range(30):
                    for variant in ("off", "on") if repeat % 2 == 0 else ("on", "off"):
                        if variant == "on":
                            active.__enter__()
                        start = time.perf_counter()
                        call()
                        samples[variant].append(time.perf_counter() - start)
                        if variant == "on":
                            active.close()
            off, on = statistics.median(samples["off"]), statistics.median(samples["on"])
            return f"unguarded {off * 1e3:.2f} ms, guarded {on * 1e3:.2f} ms, ratio {on / off:.3f}"

        step(f"torch {device} {name} guard overhead (autocast bf16)", overhead)


def jax_checks() -> None:
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    devices = []
    for backend in ("cpu", "gpu", "tpu"):
        try:
            devices += [f"{backend}:{i}" for i in range(len(jax.devices(backend)))]
        except RuntimeError:
            pass
    for device in devices:
        def precisions(device=device) -> str:
            lines = []
            for setting in ("default", "bfloat16", "tensorfloat32", "float32", "highest"):
                with jax.default_matmul_precision(setting):
                    lines.append(f"f32[{setting}] {_bits(matmul_precision('float32', 'jax', device))}")
            for dtype in ("bfloat16", "float16"):
                lines.append(f"{dtype} {_bits(matmul_precision(dtype, 'jax', device))}")
            return "; ".join(lines)

        step(f"jax {device} matmul precision", precisions)

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dense(32, dtype=jnp.bfloat16)(x)
            return nn.LayerNorm()(x)

    def flax_guard() -> str:
        model = Block()
        x = jnp.ones((4, 16), jnp.bfloat16)
        variables = model.init(jax.random.key(0), x)
        with guard(model, "mixed_bfloat16", on_violation="record") as g:
            jax.jit(model.apply)(variables, x)
        codes = sorted({(v.code, v.module_path) for v in g.violations})
        assert ("DTL191", "LayerNorm_0") in codes, codes
        recast = jax.tree.map(lambda p: p.astype(jnp.bfloat16), variables)  # noqa: DTL301 (a deliberate hazard)
        assert len(check_tree(recast, "float32")) == 4
        assert_tree_dtypes(variables, "float32")
        return f"default backend {jax.default_backend()}; violations {codes}"

    step("flax guard under jit + check_tree", flax_guard)


def main() -> int:
    start = time.perf_counter()
    report_text = format_report(device_report())
    print(report_text)
    if importlib.util.find_spec("torch") is not None:
        torch_checks()
    if importlib.util.find_spec("flax") is not None:
        jax_checks()
    print(f"\n{len(FAILURES)} failed step(s) in {time.perf_counter() - start:.1f}s"
          + (f": {', '.join(FAILURES)}" if FAILURES else ""))
    return len(FAILURES)


if __name__ == "__main__":
    sys.exit(main())
