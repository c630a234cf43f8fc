"""The project model (core.model): summaries read from ``ast``, names resolved across
files without importing them, bounded on cycles, unknown where nothing says."""

from __future__ import annotations

import ast
import os
import sys
import textwrap
from pathlib import Path

import pytest

from dtype_lint.core.model.finder import ModuleFinder, module_name
from dtype_lint.core.model.project import ProjectModel
from dtype_lint.core.model.summary import ModuleSummary, absolute_module, detail, summarize
from dtype_lint.frameworks.bases import framework_kinds


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_relative_imports_resolve_from_the_package_and_stop_above_its_root():
    assert absolute_module("heads", 1, "pkg.nets") == "pkg.nets.heads"
    assert absolute_module(None, 2, "pkg.nets") == "pkg"
    assert absolute_module("x", 3, "pkg.nets") is None


def test_a_summary_keeps_bases_stores_casts_and_passes():
    text = textwrap.dedent("""
        from torch import nn
        from .base import *
        class Net(nn.Module):
            def __init__(self, act, dim):
                self.act = act or (lambda x: x)
                self.dim = dim * 2
        def cast(model, dtype):
            model.to(dtype=dtype)
        def each(net):
            for p in net.parameters():
                p.data = p.data.half()
        def outer(m):
            return cast(m, None)
        def factory():
            def inner(): ...
            return inner
        def keyed():
            def own():
                return lambda: 0  # the nested function's return, not keyed's
            return sorted
        def lambdas():
            return lambda x: x
    """)
    summary = summarize(text, "pkg.nets.m", False)
    assert summary.stars == ["pkg.nets.base"]
    assert summary.functions["cast"].casts is None  # function bodies are read on first use
    tree = ast.parse(text)
    for name, function in summary.functions.items():
        detail(function, tree, name)
    net = summary.classes["Net"]
    assert net.bases == ["nn.Module"] and net.init_params == ["act", "dim"] and set(net.stores) == {"act"}
    assert summary.functions["cast"].casts["model"][2:] == [".to()", "dtype"]
    assert summary.functions["each"].casts["net"][2] == "each parameter"
    assert summary.functions["outer"].passes["m"][0][:2] == ["cast", 0]
    # What a function returns of its own: a local function, a lambda, or nothing.
    assert summary.functions["factory"].returns[2] == "a local function 'inner'"
    assert summary.functions["lambdas"].returns[2] == "a lambda"
    assert summary.functions["keyed"].returns == [] and summary.functions["cast"].returns == []
    assert ModuleSummary.from_json(summary.as_json()) == summary


def test_a_summary_knows_the_constructor_parameters_only_called():
    text = textwrap.dedent("""
        class Files:
            def __init__(self, files, label_fn, open_fn, parser, unused, fallback):
                self.items = [(f, label_fn(f)) for f in files]
                self.open_fn = open_fn
                self.reader = Reader(parser=parser)
                self.default = fallback or open_fn
    """)
    summary = summarize(text, "pkg.files", False)
    # kept, handed to a constructor, or read as a value: all but the called and the unused
    assert summary.classes["Files"].only_called == ["label_fn", "unused"]
    assert ModuleSummary.from_json(summary.as_json()) == summary
    stale = summary.as_json()
    del stale["classes"]["Files"]["only_called"]
    with pytest.raises(TypeError):  # a summary cached before the field existed is read again
        ModuleSummary.from_json(stale)


def test_module_names_follow_the_package_root(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/mod.py": ""})
    assert module_name(str(tmp_path / "pkg" / "sub" / "mod.py")) == ("pkg.sub.mod", False)
    assert module_name(str(tmp_path / "pkg" / "sub" / "__init__.py")) == ("pkg.sub", True)
    assert module_name(str(tmp_path / "notebook.ipynb")) is None
    assert ModuleFinder((str(tmp_path),)).find("pkg.sub.mod") == str(tmp_path / "pkg" / "sub" / "mod.py")


def test_bases_are_walked_across_files_and_reexports(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "from .a import Top\n",
        "pkg/a.py": "from pkg.b import Middle as M\nclass Top(M): ...\n",
        "pkg/b.py": "import torch.nn as tnn\nclass Middle(tnn.Module): ...\n",
        "pkg/use.py": "",
    })
    view = ProjectModel().view(str(tmp_path / "pkg" / "use.py"))
    kinds, steps = view.class_kinds("pkg.Top", framework_kinds)
    assert kinds == {"torch_module"}
    assert [s.message for s in steps] == ["Top derives from M", "Middle derives from tnn.Module"]


def test_a_namespace_package_above_the_files_package_resolves(tmp_path):
    # PEP 420: `ns/` has no __init__.py, so the linted file's package root is `ns/`;
    # `import ns.core.base` starts one folder above it. A folder that only shares a name
    # further up is not taken for it.
    write(tmp_path, {
        "ns/core/__init__.py": "",
        "ns/core/base.py": "import torch.nn as tnn\nclass Base(tnn.Module): ...\n",
        "ns/core/layers/__init__.py": "",
        "ns/core/layers/mlp.py": "",
        "other/core/__init__.py": "",
        "other/core/use.py": "",
    })
    view = ProjectModel().view(str(tmp_path / "ns" / "core" / "layers" / "mlp.py"))
    assert view.class_kinds("ns.core.base.Base", framework_kinds)[0] == {"torch_module"}
    elsewhere = ProjectModel().view(str(tmp_path / "other" / "core" / "use.py"))
    assert elsewhere.class_kinds("ns.core.base.Base", framework_kinds)[0] == set()


def test_cycles_and_unknown_names_end_as_unknown(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import B\nclass A(B): ...\n",
        "pkg/b.py": "from pkg.a import A\nclass B(A): ...\nfrom pkg.b import Loop as Loop\n",
        "pkg/use.py": "",
    })
    view = ProjectModel().view(str(tmp_path / "pkg" / "use.py"))
    assert view.class_kinds("pkg.a.A", framework_kinds) == (frozenset(), ())
    assert view.resolve("pkg.b.Loop") is None
    assert view.resolve("nowhere.at.All") is None


def test_a_name_bound_at_module_level_is_what_it_is_bound_to(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": "def lower(net):\n    net.half()\n",
    })
    text = textwrap.dedent("""
        import pkg.helpers as h
        from pkg.helpers import lower
        def own(m): ...
        shrink = h.lower
        again = lower
        mine = own
        loop = back
        back = loop
        gone = h.missing
    """)
    view = ProjectModel().view(str(tmp_path / "pkg" / "use.py"))
    for name in ("shrink", "again"):
        found = view.local(text, name)
        assert found is not None and (found.name, Path(found.path).name) == ("lower", "helpers.py")
    assert view.local(text, "mine").name == "own"
    assert view.local(text, "loop") is None and view.local(text, "gone") is None


def test_a_lint_records_what_it_consulted_and_a_changed_file_is_read_again(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": "from torch import nn\nclass B(nn.Module): ...\n",
                     "pkg/use.py": ""})
    model = ProjectModel()
    consulted = model.record()
    view = model.view(str(tmp_path / "pkg" / "use.py"))
    assert view.class_kinds("pkg.base.B", framework_kinds)[0] == {"torch_module"}
    assert str(tmp_path / "pkg" / "base.py") in consulted
    # A later lint asking the same question consults the same file (from the memo).
    again = model.record()
    model.view(str(tmp_path / "pkg" / "use.py")).class_kinds("pkg.base.B", framework_kinds)
    assert str(tmp_path / "pkg" / "base.py") in again
    (tmp_path / "pkg" / "base.py").write_text("class B: ...\n# now a plain class\n", encoding="utf-8")
    model.new_epoch()  # what a long-lived front-end does before each lint
    assert model.view(str(tmp_path / "pkg" / "use.py")).class_kinds("pkg.base.B", framework_kinds)[0] == set()


@pytest.mark.parametrize("name, kinds", [
    ("torch.nn.Linear", {"torch_module"}),
    ("torch.nn.CrossEntropyLoss", {"torch_module"}),
    ("flax.linen.Dense", {"flax_module"}),
])
def test_installed_packages_resolve_without_importing(tmp_path, name, kinds):
    pytest.importorskip(name.split(".")[0])
    view = ProjectModel().view(str(tmp_path / "x.py"))
    assert view.class_kinds(name, framework_kinds)[0] == kinds


def test_an_interpreter_the_user_chose_is_asked_without_its_standard_library(tmp_path):
    import sysconfig

    from dtype_lint.core.model.finder import located

    found = located(None, sys.executable).paths  # --python: asked, by running it
    assert found and sysconfig.get_paths()["stdlib"] not in found
    assert not any(p.endswith(os.path.join("core", "model")) for p in found)
    missing = located(None, str(tmp_path / "no-python"))
    assert missing.paths == () and "cannot run it" in missing.problem  # unknown packages, not an error
