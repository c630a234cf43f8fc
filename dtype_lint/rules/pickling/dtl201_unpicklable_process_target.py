"""DTL201: a lambda, local function or local class sent to a process pool or spawn."""

from __future__ import annotations

from dtype_lint.concepts import process_targets, unpicklable
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc

PICKLE_WHY = (
    "{kind} cannot be pickled, so {sink} fails when the worker starts under the spawn or "
    "forkserver start method (the Linux default since Python 3.14; always on macOS and "
    "Windows); define it at module level and bind arguments with functools.partial"
)


class UnpicklableProcessTarget(Rule):
    doc = RuleDoc(
        code="DTL201",
        name="unpicklable-process-target",
        summary="Lambda or local callable sent to another process",
        what_it_does="""
            Checks for a value that pickle cannot store by reference sent to another
            process: `torch.multiprocessing.spawn`/`start_processes` (`fn` and `args`),
            `Process(target=..., args=..., kwargs=...)`, `Pool(initializer=...,
            initargs=...)` and a pool's `map`/`imap`/`starmap`/`apply` (with `args`/`kwds`)
            methods (also from `with Pool() as p` and `mp.get_context(...)`), and
            `ProcessPoolExecutor(initializer=...)` with its `map` and `submit` (every
            argument).

            Sources, followed within the file by `dtype_lint.core.flow`: a lambda, a
            function or class defined inside a function, a generator (a generator
            expression, a call of a generator function of the file, or a parameter named
            `generator`/`gen` or annotated `Generator`/`Iterator` in a function that
            iterates it or yields), a local function returned by a factory of the file
            (`make_worker(cfg)`) or of another file (the project model's summary of it
            says what it returns; the finding names that file and line and carries it
            as its path), a `functools.partial` holding any of these, and inside
            a decorator the function it decorates when the wrapper copies its name with
            `functools.wraps(func)` (the module attribute then holds the wrapper, so
            pickle cannot find `func` by name). They flow through assignments (every
            value a name is given in its function), `x or (lambda ...)`, conditional
            expressions, tuple/list/dict displays, and `self.attr` stored by any method
            of the class.
            """,
        why_bad="""
            The `spawn` and `forkserver` start methods pickle the target to send it to the
            new process, and pickle stores functions by their importable name: a lambda or
            a local function has none, and the worker dies with `PicklingError` or
            `AttributeError: Can't pickle local object`. Python 3.14 made `forkserver` the
            default on Linux, so code that only ever ran with `fork` now breaks there too.
            """,
        example="""
            def main():
                def worker(rank):
                    train(rank)
                torch.multiprocessing.spawn(worker, nprocs=2)
            """,
        use_instead="""
            def worker(rank, cfg):
                train(rank, cfg)

            def main():
                torch.multiprocessing.spawn(worker, args=(cfg,), nprocs=2)
            """,
        options="""
            - `extra-pickling-sinks`: more sinks, as `"qualified.name:argument"`, where
              the argument is a keyword or a 0-based position.
            """,
        confidence="""
            `high` where the callable, what carries it and the process boundary are all
            seen in code; `medium` where the unpicklable value is known by a convention (a
            parameter taken as a generator by its name or annotation).
            """,
        precision="very-high",
        known_limits="""
            The flow stays within one file and is flow-insensitive within a function (a
            name counts as holding every value it is ever given there). Not followed: a
            value passed in as a parameter (except the decorator and generator cases
            above), returned by a method or a function of another file, stored on an
            attribute of anything but `self`, or held in a container that is built up
            with `append`; a class-level attribute; a pool passed in as a parameter. The
            pool's `map` iterable is not checked (it is consumed in the parent).
            """,
    )
    message = PICKLE_WHY
    options_used = ("extra-pickling-sinks",)
    finds = Finds(at=(process_targets.ProcessTargets,), flow=unpicklable.PICKLING)

    valid = (
        "import torch.multiprocessing as mp\ndef worker(rank): ...\nmp.spawn(worker, nprocs=2)",
        "from multiprocessing import Pool\nwith Pool(2) as p:\n    p.map(abs, [1, 2])",
        "sorted(xs, key=lambda x: x[1])",
        "from concurrent.futures import ThreadPoolExecutor\n"
        "def f():\n    with ThreadPoolExecutor() as ex:\n        ex.submit(lambda: 1)",
        "import functools, multiprocessing\ndef work(a, b): ...\n"
        "multiprocessing.Process(target=functools.partial(work, 1)).start()",
        "import multiprocessing as mp\ndef run(xs):\n    f = lambda x: x + 1\n"
        "    with mp.Pool(2) as p:\n        return p.map(abs, [f(x) for x in xs])",
    )
    invalid = (
        Invalid("import torch.multiprocessing as mp\ndef main():\n"
                "    def worker(rank): ...\n    mp.spawn(worker, nprocs=2)"),
        Invalid("import multiprocessing\nmultiprocessing.Process(target=lambda: None).start()"),
        Invalid("from multiprocessing import Pool\nwith Pool(2) as p:\n    p.map(lambda x: x + 1, [1, 2])"),
        Invalid("import multiprocessing as mp\nctx = mp.get_context('spawn')\n"
                "pool = ctx.Pool(2)\npool.imap(lambda x: x, [1])"),
        Invalid("from concurrent.futures import ProcessPoolExecutor\n"
                "def f():\n    with ProcessPoolExecutor() as ex:\n        ex.submit(lambda: 1)"),
        Invalid("import functools, multiprocessing\ndef f():\n    def work(a): ...\n"
                "    multiprocessing.Pool(initializer=functools.partial(work, 1))"),
        Invalid("import multiprocessing as mp\ndef run(xs, q):\n    rows = (x for x in xs)\n"
                "    mp.Process(target=drain, args=(rows, q)).start()"),
        Invalid("import multiprocessing as mp\ndef make(k):\n    def f(x):\n        return x * k\n    return f\n"
                "with mp.Pool(2) as p:\n    p.map(make(3), [1, 2])"),
    )
