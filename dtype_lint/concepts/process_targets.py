"""Process boundaries (``POLICY.md`` F2): what is pickled when a worker process starts. The
function and arguments of ``torch.multiprocessing.spawn``/``start_processes``, a
``multiprocessing`` ``Process``'s target, args and kwargs (through a context too), a
``Pool``'s or ``ProcessPoolExecutor``'s initializer and initargs, the function and
arguments of their ``map``/``imap``/``starmap``/``apply``/``submit``, and configured
sinks (``extra-pickling-sinks``). A ``ThreadPool`` pickles nothing."""

from __future__ import annotations

import ast
import re

from dtype_lint.concepts.unpicklable_shapes import (BODY_WORDS, callee, file_has, may_make_source, returns_local,
                                                    self_argument, stores_on_self)
from dtype_lint.core.calls import argument, method_name
from dtype_lint.core.deferred import cst
from dtype_lint.core.options import Options
from dtype_lint.core.rule import Finder, Site
from dtype_lint.core.shapes import Prefilter, in_word, literals, words
from dtype_lint.core.words import matches_any

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


class ProcessTargets(Finder):
    """What a process start pickles: its target, its pool's function and their arguments."""

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
        if value is not None:
            self.found(Site(value, {"sink": sink}, value=value))

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
