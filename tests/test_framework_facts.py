"""The bundled facts about the frameworks (dtype_lint/frameworks/facts.json): they agree
with the frameworks installed here, and they make the findings independent of what is
installed beside the linter (pre-commit's environment holds no torch)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import venv

import pytest

from conftest import FIXTURES
from dtype_lint.frameworks import generate_facts
from dtype_lint.frameworks.bases import framework_kinds
from dtype_lint.frameworks.facts import bundled_kinds, generated_from


def _installed(dotted: str) -> bool:
    module = dotted.rpartition(".")[0]
    try:
        importlib.import_module(module)
    except Exception:  # noqa: BLE001 - not installed here, or needs what is not
        return False
    return True


def test_the_bundled_facts_agree_with_the_installed_frameworks():
    pytest.importorskip("torch")
    fresh = generate_facts.collect()
    bundled = json.loads(generate_facts.OUT.read_text(encoding="utf-8"))
    if fresh["generated from"] == bundled["generated from"]:
        assert fresh == bundled, "run: python -m dtype_lint.frameworks.generate_facts"
        return
    # Other releases here: every bundled class that this environment can import is of the
    # kind it is recorded as (a release may add classes, none may change kind).
    seen = {name for kind, names in fresh.items() if kind != "generated from" for name in names}
    for kind, names in bundled.items():
        if kind == "generated from":
            continue
        wrong = [n for n in names if n in seen and n not in fresh[kind] and _installed(n)]
        assert not wrong, (kind, wrong[:10])


def test_a_framework_class_is_known_by_every_name_it_is_imported_by():
    assert {"torch_module"} <= bundled_kinds("torch.nn.Linear")
    assert {"torch_module"} <= bundled_kinds("torch.nn.modules.linear.Linear")
    assert {"torch_module"} <= framework_kinds("torch.nn.modules.loss._Loss")
    assert {"dataset"} <= framework_kinds("torch.utils.data.TensorDataset")
    assert {"flax_module"} <= framework_kinds("flax.linen.Dense")
    assert framework_kinds("torch.nn.functional.linear") == set()
    assert set(generated_from()) >= {"torch", "flax"}


def test_the_findings_do_not_depend_on_the_installed_frameworks(tmp_path):
    # An environment with no package at all, named as the one the project model reads:
    # the fixtures give the same findings as with this environment's torch and flax.
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    runs = []
    for extra in ([], ["--python", str(bare)]):
        proc = subprocess.run([sys.executable, "-m", "dtype_lint", "check", str(FIXTURES), "--output-format", "json",
                               "--no-cache", "--min-confidence", "low", *extra],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 1, proc.stderr
        runs.append({(f["path"], f["line"], f["code"]) for f in json.loads(proc.stdout)})
    assert runs[0] == runs[1]
