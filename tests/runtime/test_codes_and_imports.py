"""Runtime check codes and the promise that importing dtype_lint imports no framework."""

import subprocess
import sys
from pathlib import Path

import pytest

from dtype_lint.runtime.codes import RUNTIME_CHECKS, get_check

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = {
    "DTL191": "runtime-compute-dtype",
    "DTL192": "runtime-silent-widening",
    "DTL193": "runtime-output-dtype",
    "DTL291": "runtime-unpicklable",
    "DTL391": "runtime-param-dtype",
    "DTL392": "runtime-bypassed-param-dtype",
    "DTL393": "runtime-ineffective-recast",
}


def test_codes_and_names_are_exactly_the_specified_ones():
    assert {doc.code: doc.name for doc in RUNTIME_CHECKS} == EXPECTED


@pytest.mark.parametrize("doc", RUNTIME_CHECKS, ids=lambda d: d.code)
def test_every_check_is_fully_documented(doc):
    assert doc.kind == "runtime"
    assert doc.fix_safety == "Runtime check; nothing to fix automatically."
    for field in ("summary", "what_it_does", "why_bad", "example", "use_instead", "known_limits"):
        assert getattr(doc, field).strip(), field
    markdown = doc.markdown()
    assert f"# {doc.name} ({doc.code})" in markdown and "Kind: runtime" in markdown


def test_lookup_by_code_or_name():
    assert get_check("dtl392").name == "runtime-bypassed-param-dtype"
    assert get_check("runtime-unpicklable").code == "DTL291"
    with pytest.raises(KeyError):
        get_check("DTL999")


def test_importing_dtype_lint_runtime_imports_no_framework():
    code = (
        "import sys, dtype_lint.runtime, dtype_lint.runtime.device_cli, dtype_lint.frontends.pytest_plugin\n"
        "import dtype_lint.runtime.torch_guard, dtype_lint.runtime.flax_guard\n"
        "print(sorted(m for m in ('torch', 'jax', 'jaxlib', 'flax', 'numpy') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_runtime_modules_form_no_import_cycle():
    import ast

    package = ROOT / "dtype_lint" / "runtime"
    graph = {}
    for path in package.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dtype_lint.runtime"):
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
                imported |= {n.rsplit(".", 1)[-1] for n in names if (package / f"{n.rsplit('.', 1)[-1]}.py").exists()
                             and n.startswith("dtype_lint.runtime.")}
        graph[path.stem] = imported - {path.stem}
    # The framework guards build on session, never on the guard() factory that picks them.
    assert "guard" not in graph["torch_guard"] | graph["flax_guard"] | graph["session"]

    def reaches(start, target, seen=()):
        return any(n == target or (n not in seen and reaches(n, target, (*seen, n))) for n in graph.get(start, ()))

    cycles = [name for name in graph if name != "__init__" and reaches(name, name)]
    assert cycles == []
