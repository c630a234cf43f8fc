"""Transforms a model wrapper keeps (``POLICY.md`` F2: callables kept on a module): a
wrapper (Lightning/Fabric-style, ``wrapper-transforms``) given an output or input transform
stores it on the wrapped model, which is pickled whole when it is sent to spawned workers or
saved with ``torch.save``."""

from __future__ import annotations

from dtype_lint.concepts.unpicklable_shapes import BODY_WORDS, file_has, may_make_source, returns_local, stores_on_self
from dtype_lint.core.calls import argument
from dtype_lint.core.deferred import cst
from dtype_lint.core.options import Options
from dtype_lint.core.rule import Finder, Site
from dtype_lint.core.shapes import Prefilter, words
from dtype_lint.core.words import matches_any


class WrapperTransforms(Finder):
    """The output or input transform a model wrapper stores on the model."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        names = tuple(sorted({p.rpartition(":")[2] for p in options.wrapper_transforms}))
        keywords = words(list(names))

        def keeps(t, lc, u) -> bool:
            if any(name in t for name in names) and may_make_source(t, lc, u):
                return True
            if u is None or not file_has(u, keywords, names):
                return False
            # A factory method (`self.make()` may give what it returns to a wrapper), or a
            # value stored on self here that may reach a wrapper in another method.
            return returns_local(lc, u) or (
                stores_on_self(t, u, imported=True) and may_make_source(t, lc, u, via_self=False))

        return Prefilter(keeps, import_words=("transform", "lambda", "partial"), value_words=("lambda", "partial"),
                         body_words=BODY_WORDS)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.resolve(node.func)
        if not qualified:
            return
        for entry in self.options.wrapper_transforms:
            pattern, _, keyword = entry.rpartition(":")
            if matches_any(qualified, (pattern,)):
                sink = f"{qualified.rsplit('.', 1)[-1]}({keyword}=...)"
                self.found(Site(node, {"sink": sink}, value=argument(node, None, keyword), passed=(node, keyword)))
