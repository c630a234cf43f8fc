"""device_report() and `dtype-lint device`."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dtype_lint.runtime import device_report
from dtype_lint.runtime.device_cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_report_on_this_machine():
    torch = pytest.importorskip("torch")
    report = device_report(("torch",))
    info = report["frameworks"]["torch"]
    assert info["available"] and info["version"] == torch.__version__
    assert info["settings"]["torch.get_float32_matmul_precision()"] == torch.get_float32_matmul_precision()
    assert "torch.backends.cuda.matmul.allow_tf32" in info["settings"]
    cpu = info["devices"][0]
    assert cpu["platform"] == "cpu" and cpu["native"]["float64"] is True
    assert {k: cpu["matmul"]["float32"][k] for k in ("input_bits", "accumulator_bits")} == \
        {"input_bits": 23, "accumulator_bits": 23}
    assert cpu["matmul"]["bfloat16"]["input_bits"] == 7
    cuda = [d for d in info["devices"] if d["platform"] in ("cuda", "rocm")]
    assert len(cuda) == (torch.cuda.device_count() if torch.cuda.is_available() else 0)


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(not _has_cuda(), reason="no CUDA GPU")
def test_cuda_devices_report_capability_and_native_support():
    import torch

    for device in [d for d in device_report(("torch",))["frameworks"]["torch"]["devices"] if d["platform"] == "cuda"]:
        index = int(device["device"].split(":")[1])
        assert device["compute_capability"] == "{}.{}".format(*torch.cuda.get_device_capability(index))
        assert device["native"]["bfloat16"] == (torch.cuda.get_device_capability(index)[0] >= 8)


def test_missing_framework_is_absent_not_an_error():
    code = ("import sys, json; sys.modules['jax'] = None\n"
            "from dtype_lint.runtime import device_report\n"
            "print(json.dumps(device_report(('jax',))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["frameworks"]["jax"] == {"available": False, "reason": "not installed"}


def test_cli_text_and_json(capsys):
    pytest.importorskip("jax")
    assert main([]) == 0
    text = capsys.readouterr().out
    assert "float32 matmul: input 23 bits, accumulator 23 bits" in text
    assert "jax_enable_x64 = False" in text
    assert main(["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["frameworks"]) == {"torch", "jax"}
    jax_cpu = report["frameworks"]["jax"]["devices"][0]
    assert jax_cpu["platform"] == "cpu" and jax_cpu["matmul"]["float16"]["input_bits"] == 10
    with pytest.raises(SystemExit):
        main(["--bogus"])


def test_text_marks_cpu_capability_and_settings_inert_in_a_cpu_only_build():
    torch = pytest.importorskip("torch")
    from dtype_lint.runtime import format_report

    report = device_report(("torch",))
    text = format_report(report)
    assert f"(CPU capability {torch.backends.cpu.get_cpu_capability()})" in text
    cpu = report["frameworks"]["torch"]["devices"][0]["matmul"]["float32"]
    assert cpu["probe_ms"] >= 0 and cpu["compile_ms"] == 0
    if torch.version.cuda is None and torch.version.hip is None:
        assert "torch.backends.cuda.matmul.allow_tf32 = False  (no effect: CPU-only build)" in text
        assert "torch.get_float32_matmul_precision() = highest\n" in text  # applies on the CPU too
    else:
        assert "no effect" not in text
