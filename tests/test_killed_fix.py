"""A `--fix` run killed in the middle leaves every file either as it was or fully fixed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

OLD = "import torch\n\n\ndef layer_{i}(x, dtype=torch.float32):\n    return x\n"


def test_sigkill_mid_fix_leaves_old_or_new_files(tmp_path):
    count = 300
    for i in range(count):
        (tmp_path / f"m{i:04d}.py").write_text(OLD.format(i=i))
    new = {i: OLD.format(i=i).replace("torch.float32", "None") for i in range(count)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dtype_lint", "check", str(tmp_path), "--fix", "--unsafe-fixes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    # Kill as soon as the first file has been rewritten, while the others are being written.
    while time.monotonic() < deadline and proc.poll() is None:
        if any((tmp_path / f"m{i:04d}.py").read_text() != OLD.format(i=i) for i in (0, count // 3)):
            break
        time.sleep(0.005)
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    states = []
    for i in range(count):
        text = (tmp_path / f"m{i:04d}.py").read_text()
        assert text in (OLD.format(i=i), new[i]), f"m{i:04d}.py is neither old nor new"
        states.append(text == new[i])
    assert any(states), "no file was fixed before the kill"
    if killed:
        assert proc.returncode == -signal.SIGKILL
