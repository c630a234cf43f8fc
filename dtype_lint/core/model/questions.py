"""What a unit's shape may ask the project model while the prefilter decides what to
parse: what another file's class is, what a constructor keeps, whether a function returns
a callable of its own or casts a parameter. The answers the rules' LibCST code gets from
:class:`~dtype_lint.core.context.FileContext` and the model, over-approximated for a whole
file, and none without a model."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable

from dtype_lint.core.model.finder import class_like
from dtype_lint.core.model.summary import ClassSummary, FunctionSummary
from dtype_lint.frameworks.bases import TORCH_MODULE_BASES, framework_kinds

if TYPE_CHECKING:
    import ast

    from dtype_lint.core.model.project import FileView
    from dtype_lint.core.options import Options


class ProjectQuestions:
    """The project model's answers for one file (``text``, its ``tree``), as its view sees
    them; ``file_classes``: the names of the classes the file defines."""

    def __init__(self, view: FileView | None, text: str, tree: ast.Module, options: Options,
                 file_classes: Callable[[], frozenset[str]]) -> None:
        self.view = view
        self.text = text
        self.tree = tree
        self.options = options
        self.file_classes = file_classes
        self._casting: dict[tuple[str, int | str | None], bool] = {}

    def framework(self, qualified: str) -> set[str]:
        """What a framework's class is by its name (with the configured module bases)."""
        return framework_kinds(qualified, TORCH_MODULE_BASES | frozenset(self.options.module_bases))

    def project_kinds(self, qualified: str) -> frozenset[str]:
        """FileContext.kinds_of's answer from the project model, for a dotted name."""
        if self.view is None:
            return frozenset()
        candidates = [qualified] if "." in qualified else self.view.starred(qualified, self.text, self.tree)
        return frozenset(k for c in candidates if class_like(c) for k in self.view.class_kinds(c, self.framework)[0])

    def constructor_keeps(self, qualified: str, slot: int | str) -> bool:
        """Whether the project model finds the class a dataset, or finds that its
        ``__init__`` keeps the parameter ``slot`` binds on ``self``: what DTL204 asks of
        a module's constructor handed a callable. A class of this file that the model
        does not summarise (one defined in a function) counts."""
        if self.view is None or qualified.endswith("Dataset") or (
                "." in qualified and "dataset" in self.project_kinds(qualified)):
            return True
        found = self.view.local(self.text, qualified, self.tree)
        if found is None or not isinstance(found.node, ClassSummary):
            return qualified in self.file_classes()
        if "dataset" in self.class_kinds(qualified, found):
            return True
        params = found.node.init_params
        param = slot if isinstance(slot, str) else params[slot] if slot < len(params) else None
        return param in found.node.stores

    def returns_local(self, qualified: str) -> bool:
        """Names.returns_local: the project model's summary of a function of another file."""
        if self.view is None:
            return False
        found = self.view.local(self.text, qualified, self.tree)
        return found is not None and found.path != self.view.path and self.view.returns_local(found) is not None

    def file_class_kinds(self, name: str) -> frozenset[str] | None:
        """Names.class_kinds: a top-level class of this file, by its bases."""
        if self.view is None:
            return None
        found = self.view.local(self.text, name, self.tree)
        if found is None or not isinstance(found.node, ClassSummary) or (
                found.module is not self.view.own(self.text, self.tree)):
            return None
        return self.class_kinds(name, found)

    def class_kinds(self, qualified: str, found, depth: int = 0) -> frozenset[str]:
        """A class's kinds by its bases: through the project model, and for this file's
        classes (which the model knows by their module's saved text) through their bases
        here, as FileContext finds them."""
        if "." in qualified:
            return self.project_kinds(qualified)
        kinds: set[str] = set()
        for base in found.node.bases:
            for candidate in found.candidates(base):
                local = found.module.classes.get(candidate)
                if local is not None and depth < 8:
                    inner = dataclasses.replace(found, name=candidate, node=local)
                    kinds |= self.class_kinds(candidate, inner, depth + 1)
                else:
                    kinds |= self.framework(candidate) or self.view.class_kinds(candidate, self.framework)[0]
        return frozenset(kinds)

    def casting_function(self, qualified: str, slot: int | str | None) -> bool:
        """Whether the project model finds a function that casts the parameter ``slot``
        binds (any of its parameters: None), what DTL303's helper casts ask of it, under
        a dotted name or this file's."""
        if self.view is None:
            return False
        key = (qualified, slot)
        if key not in self._casting:
            found = self.view.local(self.text, qualified, self.tree)
            slots = (found.node.params if slot is None else [slot]) if (
                found is not None and isinstance(found.node, FunctionSummary)) else []
            self._casting[key] = any(self.view.cast_path(found, s) is not None for s in slots)
        return self._casting[key]
