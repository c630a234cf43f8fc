"""Module classes defined inside a function (``POLICY.md`` F2: a local class is as
unpicklable as a local function): pickle stores an instance by its class's qualified name,
which a class made in a function call has not, so the model built from it cannot be saved
whole or sent to another process, whatever it holds."""

from __future__ import annotations

from dtype_lint.concepts.crossing import Owner, owner
from dtype_lint.concepts.kept import site_of
from dtype_lint.core.deferred import cst
from dtype_lint.core.rule import Finder
from dtype_lint.core.shapes import Prefilter
from dtype_lint.core.traversal import descendants
from dtype_lint.core.words import words_of

# Every instance keeps its class (`__class__`), which pickle names by its qualified name.
_BUILT = Owner("every model built from it (pickle cannot import a class made in a function)")
_IN_PLACE = Owner(_BUILT.what, "low", "the function neither returns nor stores an instance: a throwaway, unless "
                                     "something it is handed keeps one")
_EXPORTED = Owner(_BUILT.what, "low", "made in a function named for export, inference or prediction, whose model "
                                     "is traced or run rather than pickled")
# Words of a function's name that say it exports, traces or runs a model for inference.
EXPORT_WORDS = frozenset({"export", "exporter", "trace", "script", "onnx", "coreml", "tflite", "infer", "inference",
                          "predict", "demo", "serve"})


class LocalModuleClasses(Finder):
    """A module class defined in a function."""

    @classmethod
    def prefilter(cls, options) -> Prefilter:
        return Prefilter(lambda t, lc, u: "class " in t and lc, import_words=("Module", "nn"))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        info = self.ctx.known_classes.get(node.name.value)
        if info is not None and info.local and "torch_module" in info.kinds:
            scopes = [scope.name for scope in self.ctx.scopes if isinstance(scope.node, cst.FunctionDef)]
            exporting = any(words_of(name) & EXPORT_WORDS for name in scopes)
            function = self.ctx.function
            kept = function is not None and _escapes(node.name.value, function.node,
                                                     lambda target: owner(target, self.ctx, self.options) is not None)
            # A wrapper made to export or trace a model (CoreML, ONNX) is traced, not
            # pickled; an instance the function neither returns nor stores is a throwaway.
            held_by = _EXPORTED if exporting else _BUILT if kept else _IN_PLACE
            self.found(site_of(node.name, held_by, kind=f"the local class '{node.name.value}'"))


def _escapes(name: str, function: cst.FunctionDef, crosses) -> bool:
    """Whether an instance of the class leaves the function: returned (directly or through
    a name), or stored on an attribute or in a container of something that crosses a
    process boundary (``crosses``: a model, a dataset; not a plain object)."""
    def made(expr: cst.CSTNode, names: set[str]) -> bool:
        return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == name
                   or isinstance(n, cst.Name) and n.value in names for n in descendants(expr))

    names: set[str] = set()
    for node in descendants(function.body):
        if isinstance(node, cst.Assign) and made(node.value, set()):
            names |= {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
    for node in descendants(function.body):
        if isinstance(node, cst.Return) and node.value is not None and made(node.value, names):
            return True
        if isinstance(node, cst.Assign) and made(node.value, names) and any(
                isinstance(t.target, (cst.Attribute, cst.Subscript)) and crosses(t.target.value) for t in node.targets):
            return True
    return False
