"""The import a fix adds: LibCST's helper run on the module's head gives the text the
helper gives when it runs on the whole module."""

from __future__ import annotations

import ast

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, ImportItem

from dtype_lint.core.fixes import apply_edits
from dtype_lint.core.imports import import_edit

MODULES = {
    "docstring and imports": '"""Doc."""\nimport torch\n\nX = 1\n',
    "no import": "X = 1\n\ndef f():\n    pass\n",
    "only imports": "import os\nimport torch\n",
    "comments before the code": "import torch\n# a comment\n\n\n@decorator\ndef f():\n    pass\n",
    "typing imported": "from typing import Any\nimport torch\n\nclass A:\n    pass\n",
    "already imported": "from typing import Optional\n\nX = 1\n",
    "imported after the code": "X = 1\nfrom typing import Optional\n",
    "future import": "from __future__ import annotations\n\nimport torch\nY = 2\n",
    "empty": "",
}
IMPORTS = [(("typing", "Optional"),), (("typing", "Optional"), ("torch", None))]


def _whole_module(text: str, imports) -> str:
    items = [ImportItem(module, name) for module, name in imports]
    return AddImportsVisitor(CodemodContext(), items).transform_module(cst.parse_module(text)).code


@pytest.mark.parametrize("imports", IMPORTS)
@pytest.mark.parametrize("name", MODULES)
def test_the_head_alone_gives_the_whole_modules_result(name, imports):
    text = MODULES[name]
    for tree in (None, ast.parse(text)):
        edit = import_edit(text, imports, tree=tree)
        assert (apply_edits(text, [edit]) if edit else text) == _whole_module(text, imports)


def test_a_notebooks_top_level_await_does_not_stop_it():
    text = "import torch\nawait setup()\n"
    edit = import_edit(text, [("typing", "Optional")])
    assert apply_edits(text, [edit]) == "import torch\nfrom typing import Optional\n\nawait setup()\n"
