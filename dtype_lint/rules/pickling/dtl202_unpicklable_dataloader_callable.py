"""DTL202: a lambda or local function given to a DataLoader that starts workers."""

from __future__ import annotations

from dtype_lint.concepts import loaders, unpicklable
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc
from dtype_lint.rules.pickling.dtl201_unpicklable_process_target import PICKLE_WHY


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
        confidence="""
            `high` where the callable and the loader's workers are seen in code; `medium`
            where the unpicklable value is known by a convention (a parameter taken as a
            generator by its name or annotation).
            """,
        precision="high",
        known_limits="""
            `num_workers` passed through `**kwargs` counts as non-zero. A loader built
            by a wrapper function (one that forwards `collate_fn` to `DataLoader`) is not
            followed, nor a dict of loader arguments built in another function or file.
            Loaders other than torch's `DataLoader` are only read by keyword, since their
            positional order is unknown. See DTL201 for the flows not followed.
            """,
    )
    message = PICKLE_WHY
    finds = Finds(at=(loaders.LoaderCallables,), flow=unpicklable.PICKLING)

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
