"""DTL202: a lambda or local function given to a DataLoader that starts workers."""

from __future__ import annotations

import ast
import re

from dtype_lint.core.deferred import cst
from dtype_lint.core.flow import PICKLING, FileFlow
from dtype_lint.core.shapes import Prefilter
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options
from dtype_lint.rules.patterns import argument, has_star_kwargs
from dtype_lint.rules.pickling.dtl201_unpicklable_process_target import PICKLE_WHY
from dtype_lint.rules.pickling.flow_shapes import (
    BODY_WORDS,
    callee,
    file_has,
    may_make_source,
    returns_local,
    self_argument,
    stores_on_self,
)

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
#            pin_memory, drop_last, timeout, worker_init_fn, ...)
_CALLABLES = (("collate_fn", 6), ("worker_init_fn", 10))
_NUM_WORKERS = ("num_workers", 5)
_LOADER_WORD = re.compile("DataLoader")
_WORKER_INIT_STORE = re.compile(r"\.\s*worker_init_fn\s*=(?!=)")


class UnpicklableDataLoaderCallable(Rule):
    doc = RuleDoc(
        code="DTL202",
        name="unpicklable-dataloader-callable",
        summary="Lambda or local function as a DataLoader collate_fn/worker_init_fn with workers",
        what_it_does="""
            Checks `DataLoader(...)` calls, and calls of other loaders named `*Loader`
            that take the same keywords (`ChainerDataLoader`, `WebLoader`), whose
            `collate_fn` or `worker_init_fn` may hold a value pickle cannot store by
            reference, when `num_workers` is given and is not literally `0`. The values
            and their flows are DTL201's (`dtype_lint.core.flow`): lambdas, local
            functions and classes, factories' local functions, partials of those,
            through names, `x or (lambda ...)`, conditional expressions and `self.attr`.
            A `**kwargs` argument is followed to the dict it names: its display,
            `dict(...)`, `d["worker_init_fn"] = ...` and `d.update(...)` in the same
            function; such a value is reported where it is stored. So is a value
            assigned to a loader's `worker_init_fn` attribute after it is made
            (`self.worker_init_fn = init` in a loader class or mixin): it runs in each
            worker, so that loader has workers.
            """,
        why_bad="""
            With `num_workers > 0`, each worker receives the dataset, `collate_fn` and
            `worker_init_fn` by pickling under the `spawn` and `forkserver` start methods
            (the Linux default since Python 3.14, and always on macOS and Windows). A
            lambda or local function cannot be pickled: the first epoch dies with
            `Can't pickle local object`, often hours into a job that worked with `fork`.
            """,
        example="""
            loader = DataLoader(ds, batch_size=32, num_workers=4,
                                collate_fn=lambda batch: pad(batch, value=0))
            """,
        use_instead="""
            loader = DataLoader(ds, batch_size=32, num_workers=4,
                                collate_fn=functools.partial(pad, value=0))
            """,
        known_limits="""
            `num_workers` passed through `**kwargs` counts as non-zero. A loader built
            by a wrapper function (one that forwards `collate_fn` to `DataLoader`) is not
            followed, nor a dict of loader arguments built in another function or file.
            Loaders other than torch's `DataLoader` are only read by keyword, since their
            positional order is unknown. See DTL201 for the flows not followed.
            """,
    )
    message = PICKLE_WHY
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

    valid = (
        "from torch.utils.data import DataLoader\nDataLoader(ds, collate_fn=lambda b: b)",
        "from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=0, collate_fn=lambda b: b)",
        "from torch.utils.data import DataLoader\ndef collate(b): ...\n"
        "DataLoader(ds, num_workers=4, collate_fn=collate)",
        "import functools\nfrom torch.utils.data import DataLoader\ndef collate(b, pad): ...\n"
        "DataLoader(ds, num_workers=4, collate_fn=functools.partial(collate, pad=0))",
        "ChainerLoader(ds, 1, 4, lambda b: b)",
        "import yaml\nyaml.load(text, Loader=yaml.SafeLoader)",
    )
    invalid = (
        Invalid("from torch.utils.data import DataLoader\n"
                "DataLoader(ds, num_workers=4, collate_fn=lambda b: b)"),
        Invalid("import torch\ndef make(ds, n):\n    def init(worker_id): ...\n"
                "    return torch.utils.data.DataLoader(ds, num_workers=n, worker_init_fn=init)"),
        Invalid("from mylib.loaders import ShardedDataLoader\n"
                "ShardedDataLoader(dataset=ds, num_workers=args.procs, collate_fn=lambda b: b[0])"),
        Invalid("from torch.utils.data import DataLoader\ndef make(ds, cfg):\n    kw = dict(cfg)\n"
                "    kw['worker_init_fn'] = lambda i: seed(i)\n    return DataLoader(ds, **kw)"),
        Invalid("class AffinityLoader(DataLoader):\n    def pin(self, cores):\n"
                "        def init(worker_id):\n            set_affinity(cores[worker_id])\n"
                "        self.worker_init_fn = init"),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        """``loader.worker_init_fn = init``: set on a loader (or a loader class's ``self``)
        after it is made; it runs in each worker, so the loader has workers."""
        if not any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "worker_init_fn"
                   for t in node.targets):
            return
        for source in FileFlow.of(self.ctx).sources(node.value, PICKLING):
            self.report(source.at, self.message.format(kind=source.kind, sink="a loader's worker_init_fn"),
                        flow=source.steps)

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
        flow = FileFlow.of(self.ctx)
        for keyword, position in _CALLABLES:
            value = argument(node, position if positional else None, keyword)
            sources = flow.sources(value, PICKLING) if value is not None else []
            # What `**loader_kwargs` passes, reported where the entry is stored.
            sources += flow.keyword_sources(node, keyword, PICKLING)
            sink = f"{last}({keyword}=...) with workers"
            for source in sources:
                self.report(source.at, self.message.format(kind=source.kind, sink=sink), flow=source.steps)


def _may_pass_callable(call: ast.Call) -> bool:
    """A loader call that may pass a collate_fn or worker_init_fn (by keyword, through
    ``**kwargs``, or by position)."""
    if not callee(call).endswith("Loader"):
        return False
    return len(call.args) > 6 or any(k.arg in (None, "collate_fn", "worker_init_fn") for k in call.keywords)
