"""DTL201: a lambda, local function or local class sent to a process pool or spawn."""

from __future__ import annotations

import ast
import re

from dtype_lint.core.deferred import cst
from dtype_lint.core.flow import PICKLING, FileFlow
from dtype_lint.core.shapes import Prefilter, in_word, literals, words
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options
from dtype_lint.rules.patterns import argument, matches_any, method_name
from dtype_lint.rules.pickling.flow_shapes import (
    BODY_WORDS,
    callee,
    file_has,
    may_make_source,
    returns_local,
    self_argument,
    stores_on_self,
)

_MP_ROOTS = ("multiprocessing", "torch.multiprocessing")
# What calls named directly pickle: (keyword, position) of the function, then of its
# arguments (all pickled for the worker).
_SPAWNS = {
    "torch.multiprocessing.spawn": (("fn", 0), ("args", 1)),
    "torch.multiprocessing.start_processes": (("fn", 0), ("args", 1)),
    "torch.multiprocessing.spawn.spawn": (("fn", 0), ("args", 1)),
    "torch.multiprocessing.spawn.start_processes": (("fn", 0), ("args", 1)),
}
_POOL_METHODS = {
    "pool": ("map", "map_async", "imap", "imap_unordered", "starmap", "starmap_async", "apply", "apply_async"),
    "executor": ("submit", "map"),
}
# Process(group, target, name, args, kwargs); Pool(processes, initializer, initargs);
# ProcessPoolExecutor(max_workers, mp_context, initializer, initargs).
_PROCESS_ARGS = (("target", 1), ("args", 3), ("kwargs", 4))
_INITIALIZERS = {"pool": (("initializer", 1), ("initargs", 2)), "executor": (("initializer", 2), ("initargs", 3))}
PICKLE_WHY = (
    "{kind} cannot be pickled, so {sink} fails when the worker starts under the spawn or "
    "forkserver start method (the Linux default since Python 3.14; always on macOS and "
    "Windows); define it at module level and bind arguments with functools.partial"
)


_SINK_WORDS = ("spawn", "start_processes", "Process", "Pool")
# The calls the rule reads (by their last name), and the words of a file that has one.
_MAKERS = frozenset({"Pool", "ProcessPoolExecutor"})
_SINK_CALLS = frozenset({"spawn", "start_processes", "Process", *_MAKERS})
_POOL_CALLS = frozenset({*_POOL_METHODS["pool"], *_POOL_METHODS["executor"]})
# A sink's call in a text: `\b` + one of these (each searched from its literal start, far
# faster than an alternation; the word boundary is checked apart), or a pool method.
_SINK_CALL_TEXT = tuple(re.compile(rf"{word}\s*\(") for word in
                        ("spawn", "start_processes", "Process", "Pool", "ProcessPoolExecutor"))
_POOL_CALL_TEXT = re.compile(r"\.\s*(?:i?map\w*|starmap\w*|apply\w*|submit)\s*\(")
_FILE_SINKS = re.compile(r"\b(?:spawn|start_processes|Process|Pool|ProcessPoolExecutor)\b")

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
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        sinks = literals(p.rpartition(":")[0] for p in options.extra_pickling_sinks)
        if sinks is None:
            return None
        extra = words(sinks)

        def keeps(t, lc, u) -> bool:
            if any(w in t for w in _SINK_WORDS) or (sinks and extra.search(t)):
                if u is None:
                    return bool((sinks or _sink_call(t)) and may_make_source(t, lc, u))
                calls = [c for c in u.index(ast.Call) if sinks or _may_be_sink(c, u)]
                if calls and (may_make_source(t, lc, u, via_self=False) or any(self_argument(c) for c in calls)):
                    return True
            if u is None or not (file_has(u, _FILE_SINKS, _SINK_WORDS) or (sinks and file_has(u, extra, tuple(sinks)))):
                return False
            # A factory method (`self.make()` may send what it returns to a sink), or a
            # value stored on self here that may reach a sink in another method.
            return returns_local(lc, u) or (
                stores_on_self(t, u, imported=True) and may_make_source(t, lc, u, via_self=False))

        return Prefilter(
            keeps,
            import_words=("spawn", "start_processes", "Process", "Pool", "lambda", "partial"),
            configured=tuple(sinks),
            # Pools and process contexts bound to a name, and callables that cannot be pickled.
            value_words=("lambda", "partial"),
            value_names=(*_SINK_CALLS - {"start_processes"}, "get_context"),
            body_words=BODY_WORDS,
        )

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

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.resolve(node.func)
        if qualified in _SPAWNS:
            for keyword, position in _SPAWNS[qualified]:
                self._check(argument(node, position, keyword), f"{qualified}({keyword}=...)")
            return
        factory = self._factory_kind(node)
        if factory == "process":
            for keyword, position in _PROCESS_ARGS:
                self._check(argument(node, position, keyword), f"Process({keyword}=...)")
        elif factory in ("pool", "executor"):
            for keyword, position in _INITIALIZERS[factory]:
                self._check(argument(node, position, keyword), f"the pool's {keyword}")
        name = method_name(node)
        if name is not None and name in _POOL_METHODS["pool"] + _POOL_METHODS["executor"]:
            kind = self._pool_kind(node.func.value)  # type: ignore[union-attr]
            if kind and name in _POOL_METHODS[kind]:
                sink = f"a process pool's {name}()"
                self._check(argument(node, 0, "func" if kind == "pool" else "fn"), sink)
                if kind == "executor" and name == "submit":
                    # submit(fn, *args, **kwargs): every argument goes to the worker.
                    for arg in node.args[1:]:
                        self._check(arg.value, sink)
                elif name in ("apply", "apply_async"):
                    for keyword, position in (("args", 1), ("kwds", 2)):
                        self._check(argument(node, position, keyword), sink)
        if qualified:
            for sink in self.options.extra_pickling_sinks:
                pattern, _, arg = sink.rpartition(":")
                if matches_any(qualified, (pattern,)):
                    position = int(arg) if arg.isdigit() else None
                    self._check(argument(node, position, None if arg.isdigit() else arg), qualified)

    def _check(self, value: cst.BaseExpression | None, sink: str) -> None:
        if value is None:
            return
        for source in FileFlow.of(self.ctx).sources(value, PICKLING):
            self.report(source.at, self.message.format(kind=source.kind, sink=sink), flow=source.steps)

    def _factory_kind(self, call: cst.Call) -> str | None:
        """'process', 'pool' or 'executor' when the call makes one of those."""
        qualified = self.ctx.resolve(call.func) or ""
        last = qualified.rsplit(".", 1)[-1]
        if last == "ProcessPoolExecutor":
            return "executor"
        if last not in ("Process", "Pool"):
            return None
        owner = call.func.value if isinstance(call.func, cst.Attribute) else None
        if qualified.startswith(_MP_ROOTS) or (owner is not None and self._is_mp_context(owner)):
            return "process" if last == "Process" else "pool"
        return None

    def _is_mp_context(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            bound = self.ctx.lookup_binding(expr.value)
            return bound is not None and self._is_mp_context(bound)
        if isinstance(expr, cst.Call):
            qualified = self.ctx.resolve(expr.func) or ""
            return qualified.startswith(_MP_ROOTS) and qualified.endswith("get_context")
        return False

    def _pool_kind(self, receiver: cst.BaseExpression, depth: int = 0) -> str | None:
        if isinstance(receiver, cst.Call):
            kind = self._factory_kind(receiver)
            return kind if kind in ("pool", "executor") else None
        if isinstance(receiver, cst.Name) and depth < 4:
            bound = self.ctx.lookup_binding(receiver.value)
            return self._pool_kind(bound, depth + 1) if bound is not None else None
        return None



def _sink_call(text: str) -> bool:
    """Whether the text may call a sink (a spawn, a Process or pool, or a pool method)."""
    return any(not in_word(text, m.start() - 1) for pattern in _SINK_CALL_TEXT for m in pattern.finditer(text)) or bool(
        _POOL_CALL_TEXT.search(text))


def _may_be_sink(call: ast.Call, u) -> bool:
    """A call the rule may read: a spawn, a Process or pool, or a pool method whose
    receiver may be a pool (a Pool/ProcessPoolExecutor call, or a name bound to one)."""
    name = callee(call)
    if name in _SINK_CALLS:
        return True
    if name not in _POOL_CALLS or not isinstance(call.func, ast.Attribute):
        return False
    receiver, bindings = call.func.value, u.names().bindings
    for _ in range(5):
        if isinstance(receiver, ast.Call):
            return callee(receiver) in _MAKERS
        if not isinstance(receiver, ast.Name):
            return False
        values = bindings.get(receiver.id, ())
        if any(isinstance(v, ast.Call) and callee(v) in _MAKERS for v in values):
            return True
        names = [v for v in values if isinstance(v, ast.Name)]
        if not names:
            return False
        receiver = names[0]
    return True
