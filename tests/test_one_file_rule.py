"""Adding a rule is adding one file: a copy of the package with one more rule module runs it
in the CLI, lists it and explains it, with and without the prefilter, with no other edit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dtype_lint

# A rule with a finder of its own that has a prefilter (text test and shape), one whose
# finder has none (its files are parsed whole), and one declared from the concepts alone
# (no logic of its own: its prefilter follows from its finders').
WITH_PREFILTER = '''
"""DTL109: a float64 dtype attribute (a rule of the test's own)."""

from __future__ import annotations

import ast

from dtype_lint.core.deferred import cst
from dtype_lint.core.shapes import Prefilter
from dtype_lint.core.rule import Finder, Finds, Invalid, Rule, Site
from dtype_lint.core.ruledoc import RuleDoc
from dtype_lint.core.options import Options


class Float64Attributes(Finder):
    """A `.float64` attribute."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        return Prefilter(lambda t, lc, u: "float64" in t and (u is None or any(
            n.attr == "float64" for n in u.index(ast.Attribute))))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "float64":
            self.found(Site(node))


class Float64Attribute(Rule):
    doc = RuleDoc(
        code="DTL109",
        name="float64-attribute",
        summary="A float64 dtype attribute",
        what_it_does="Reports `x.float64`.",
        why_bad="Doubles are slow on accelerators.",
        example="torch.float64",
        use_instead="torch.float32",
    )
    message = "float64 is slow on accelerators"
    finds = Finds(at=(Float64Attributes,))
    valid = ("x = torch.float32",)
    invalid = (Invalid("x = torch.float64"),)
'''

WITHOUT_PREFILTER = '''
"""DTL398: a call of `recast_everything` (a rule of the test's own, with no prefilter)."""

from __future__ import annotations

from dtype_lint.core.deferred import cst
from dtype_lint.core.rule import Finder, Finds, Rule, Site
from dtype_lint.core.ruledoc import RuleDoc


class RecastEverythingCalls(Finder):
    """A call of `recast_everything`."""

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "recast_everything":
            self.found(Site(node))


class RecastEverything(Rule):
    doc = RuleDoc(
        code="DTL398",
        name="recast-everything",
        summary="A call of recast_everything",
        what_it_does="Reports `recast_everything(...)`.",
        why_bad="It recasts every parameter.",
        example="recast_everything(model)",
        use_instead="model = Model(dtype=...)",
    )
    message = "recast_everything casts every parameter"
    finds = Finds(at=(RecastEverythingCalls,))
'''

# Declared from the concepts alone: the process targets and loaders DTL201/DTL202 look at,
# with the unpicklable values the flow engine follows there.
FROM_CONCEPTS = '''
"""DTL299: anything unpicklable a process or a loader's workers receive (a rule of the test's own)."""

from __future__ import annotations

from dtype_lint.concepts import loaders, process_targets, unpicklable
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


class UnpicklableAcrossProcesses(Rule):
    doc = RuleDoc(
        code="DTL299",
        name="unpicklable-across-processes",
        summary="Something unpicklable sent to another process",
        what_it_does="Reports lambdas and local functions sent to processes or loader workers.",
        why_bad="Spawned workers cannot unpickle them.",
        example="DataLoader(ds, num_workers=2, collate_fn=lambda b: b)",
        use_instead="DataLoader(ds, num_workers=2, collate_fn=collate)",
        default_enabled=False,
    )
    message = "{kind} reaches {sink}"
    finds = Finds(at=(process_targets.ProcessTargets, loaders.LoaderCallables), flow=unpicklable.PICKLING)
    invalid = (Invalid("from torch.utils.data import DataLoader\\nDataLoader(ds, num_workers=2, collate_fn=lambda b: b)"),)
'''

TARGET = textwrap.dedent("""\
    import torch


    def f(x):
        return x.to(torch.float64)


    def g(model):
        recast_everything(model)


    class Plain:
        value = 1
""")


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    """A copy of the installed package with the three rule modules added, and nothing else changed."""
    root = tmp_path_factory.mktemp("copy")
    shutil.copytree(Path(dtype_lint.__file__).parent, root / "dtype_lint",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "dtype_lint" / "rules" / "float32" / "dtl109_float64_attribute.py").write_text(WITH_PREFILTER)
    (root / "dtype_lint" / "rules" / "recast" / "dtl398_recast_everything.py").write_text(WITHOUT_PREFILTER)
    (root / "dtype_lint" / "rules" / "pickling" / "dtl299_unpicklable_across_processes.py").write_text(FROM_CONCEPTS)
    return root


def run(package_copy: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(package_copy)}
    return subprocess.run([sys.executable, "-m", "dtype_lint", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_copy_is_the_one_imported(package_copy: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(package_copy)}
    where = subprocess.run([sys.executable, "-c", "import dtype_lint; print(dtype_lint.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(package_copy))


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
def test_a_dropped_in_rule_runs_in_the_cli(package_copy: Path, tmp_path: Path, prefilter: bool) -> None:
    (tmp_path / "model.py").write_text(TARGET)
    (tmp_path / "pyproject.toml").write_text("[tool.dtype-lint]\nselect = ['DTL']\n")
    args = ["check", "model.py", "--output-format", "json", "--no-cache"]
    proc = run(package_copy, tmp_path, *args, *([] if prefilter else ["--no-prefilter"]))
    assert proc.returncode == 1, proc.stderr
    found = {(f["code"], f["line"]) for f in json.loads(proc.stdout)}
    assert found == {("DTL109", 5), ("DTL398", 9)}


def test_a_dropped_in_rule_is_listed_explained_and_selectable(package_copy: Path, tmp_path: Path) -> None:
    listed = run(package_copy, tmp_path, "rules").stdout
    assert "DTL109" in listed and "float64-attribute" in listed and "DTL398" in listed
    explained = run(package_copy, tmp_path, "explain", "DTL109")
    assert explained.returncode == 0 and "Doubles are slow on accelerators." in explained.stdout
    (tmp_path / "model.py").write_text(TARGET)
    only = run(package_copy, tmp_path, "check", "model.py", "--select", "DTL109", "--output-format", "json",
               "--no-cache")
    assert [f["code"] for f in json.loads(only.stdout)] == ["DTL109"]


def test_the_rule_is_absent_from_the_real_package(tmp_path: Path) -> None:
    """The copy, not the installed package, carries the rule: the test above can fail."""
    proc = subprocess.run([sys.executable, "-m", "dtype_lint", "rules"], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    assert "DTL109" not in proc.stdout


LOADER = textwrap.dedent("""\
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, num_workers=2, collate_fn=lambda b: b)
""")


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
def test_a_rule_declared_from_the_concepts_alone_runs(package_copy: Path, tmp_path: Path, prefilter: bool) -> None:
    """No finder, shape or prefilter of its own: the concepts' finders, the flow engine and
    their prefilters do the work, and its docs page says what it finds."""
    (tmp_path / "loader.py").write_text(LOADER)
    args = ["check", "loader.py", "--select", "DTL299", "--output-format", "json", "--no-cache"]
    proc = run(package_copy, tmp_path, *args, *([] if prefilter else ["--no-prefilter"]))
    assert proc.returncode == 1, proc.stderr
    assert [(f["code"], f["line"], f["message"]) for f in json.loads(proc.stdout)] == [
        ("DTL299", 3, "a lambda reaches DataLoader(collate_fn=...) with workers")]
    explained = run(package_copy, tmp_path, "explain", "DTL299").stdout
    assert "The collate_fn and worker_init_fn of a loader with workers." in explained
