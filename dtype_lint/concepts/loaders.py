"""Loaders with workers (``POLICY.md`` F2): a ``DataLoader`` (or another ``*Loader`` with the
same keywords) whose ``num_workers`` is given and not literally 0 pickles its
``collate_fn`` and ``worker_init_fn`` for every worker; so does a loader whose
``worker_init_fn`` is set after it is made (it runs in each worker, so there are workers).
A loader whose workers are always 0 pickles nothing."""

from __future__ import annotations

import ast
import re

from dtype_lint.concepts.unpicklable_shapes import (BODY_WORDS, callee, file_has, may_make_source, returns_local,
                                                    self_argument, stores_on_self)
from dtype_lint.core.calls import argument, has_star_kwargs
from dtype_lint.core.deferred import cst
from dtype_lint.core.options import Options
from dtype_lint.core.rule import Finder, Site
from dtype_lint.core.shapes import Prefilter

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
#            pin_memory, drop_last, timeout, worker_init_fn, ...)
_CALLABLES = (("collate_fn", 6), ("worker_init_fn", 10))
_NUM_WORKERS = ("num_workers", 5)
_LOADER_WORD = re.compile("DataLoader")
_WORKER_INIT_STORE = re.compile(r"\.\s*worker_init_fn\s*=(?!=)")


class LoaderCallables(Finder):
    """The collate_fn and worker_init_fn of a loader with workers."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter:
        def keeps(t, lc, u) -> bool:
            if "worker_init_fn" in t and _WORKER_INIT_STORE.search(t):
                return True
            if "DataLoader" in t:
                if u is None:
                    return may_make_source(t, lc, u)
                calls = [c for c in u.index(ast.Call) if _may_pass_callable(c)]
                if calls and (may_make_source(t, lc, u, via_self=False) or any(self_argument(c) for c in calls)):
                    return True
            if u is None or not file_has(u, _LOADER_WORD, ("DataLoader",)):
                return False
            # A factory method (`self.make()` may give what it returns to a loader), or a
            # value stored on self here that may reach a loader in another method.
            return returns_local(lc, u) or (
                stores_on_self(t, u, imported=True) and may_make_source(t, lc, u, via_self=False))

        return Prefilter(keeps, import_words=("DataLoader", "lambda", "partial"), value_words=("lambda", "partial"),
                         body_words=BODY_WORDS)

    def visit_Assign(self, node: cst.Assign) -> None:
        """``loader.worker_init_fn = init``: set on a loader (or a loader class's ``self``)
        after it is made; it runs in each worker, so the loader has workers."""
        if not any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "worker_init_fn"
                   for t in node.targets):
            return
        self.found(Site(node.value, {"sink": "a loader's worker_init_fn"}, value=node.value))

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.resolve(node.func)
        last = qualified.rsplit(".", 1)[-1] if qualified else ""
        if not last.endswith("Loader"):
            return
        # Only torch's DataLoader has a known positional order.
        positional = last == "DataLoader"
        workers = argument(node, _NUM_WORKERS[1] if positional else None, _NUM_WORKERS[0])
        if workers is None and not has_star_kwargs(node):
            return  # DataLoader's default is num_workers=0
        if isinstance(workers, cst.Integer) and workers.evaluated_value == 0:
            return
        for keyword, position in _CALLABLES:
            value = argument(node, position if positional else None, keyword)
            # What `**loader_kwargs` passes too, reported where the entry is stored.
            self.found(Site(node, {"sink": f"{last}({keyword}=...) with workers"}, value=value,
                            passed=(node, keyword)))

def _may_pass_callable(call: ast.Call) -> bool:
    """A loader call that may pass a collate_fn or worker_init_fn (by keyword, through
    ``**kwargs``, or by position)."""
    if not callee(call).endswith("Loader"):
        return False
    return len(call.args) > 6 or any(k.arg in (None, "collate_fn", "worker_init_fn") for k in call.keywords)
