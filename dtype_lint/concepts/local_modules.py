"""Module classes defined inside a function (``POLICY.md`` F2: a local class is as
unpicklable as a local function): pickle stores an instance by its class's qualified name,
which a class made in a function call has not, so the model built from it cannot be saved
whole or sent to another process, whatever it holds."""

from __future__ import annotations

from dtype_lint.concepts.crossing import Owner
from dtype_lint.concepts.kept import site_of
from dtype_lint.core.deferred import cst
from dtype_lint.core.rule import Finder
from dtype_lint.core.shapes import Prefilter

# Every instance keeps its class (`__class__`), which pickle names by its qualified name.
_BUILT = Owner("every model built from it (pickle cannot import a class made in a function)")


class LocalModuleClasses(Finder):
    """A module class defined in a function."""

    @classmethod
    def prefilter(cls, options) -> Prefilter:
        return Prefilter(lambda t, lc, u: "class " in t and lc, import_words=("Module", "nn"))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        info = self.ctx.known_classes.get(node.name.value)
        if info is not None and info.local and "torch_module" in info.kinds:
            self.found(site_of(node.name, _BUILT, kind=f"the local class '{node.name.value}'"))
