"""What torch and Flax guards share: the active-guard lifecycle, findings and root causes.

:mod:`~dtype_lint.runtime.torch_guard` and :mod:`~dtype_lint.runtime.flax_guard`
build on :class:`Guard`; :mod:`~dtype_lint.runtime.guard` picks one of them. This
module imports neither, so the framework modules never import the module that
chooses between them.

Root causes, not cascades: a module whose output leaves the policy although its
inputs did not is reported; a module whose inputs already carried the off-policy
dtype only passes it on and is counted under the finding that produced it (which
the guard keeps per tensor, by identity, for as long as the tensor lives).
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from dtype_lint.runtime import autocast
from dtype_lint.runtime.allow import Allow
from dtype_lint.runtime.dtypes import is_narrower_than_float32
from dtype_lint.runtime.policy import Policy
from dtype_lint.runtime.violations import (
    DTypeGuardWarning,
    DTypeViolationError,
    Recorder,
    Violation,
    user_stacklevel,
)

ROOT_PATH = "(root)"

#: A guard that saw fewer than this share of the model's modules warns on exit.
COVERAGE_SHARE = 0.5


class Guard:
    """An installable set of checks; a context manager that removes itself on exit.

    ``.violations`` lists the distinct violations seen so far, each with ``.code``,
    ``.module_path``, ``.message``, ``.count`` and ``.downstream``.
    """

    def __init__(self, model: Any, policy: Policy | str, on_violation: str = "raise",
                 allow: Iterable[Any] | str | type | None = None) -> None:
        self.model = model
        self.policy = Policy.coerce(policy)
        self.allow = Allow(allow)
        self._recorder = Recorder(on_violation)
        self.active = False
        self._seen: set[str] = set()
        # id(tensor) -> (weak reference or holder, the finding that produced its dtype).
        self._origins: dict[int, tuple[Callable[[], Any], Violation]] = {}
        self._findings: dict[tuple, Violation] = {}
        self._notes: set[str] = set()
        # ids of the floating inputs of the outermost call in progress: a dtype they
        # carry is the caller's, and is blamed on the first module that returns it.
        self.entry_ids: set[int] = set()
        # Outermost calls entered and not returned from: one that raised stays counted.
        self.unfinished_calls = 0
        # parent path -> dtype -> finding held until that parent returns; and the
        # modules counted downstream of each held finding meanwhile.
        self._pending: dict[str, dict[str, Violation]] = {}
        self._pending_down: dict[Violation, list[str]] = {}

    @property
    def on_violation(self) -> str:
        return self._recorder.on_violation

    @property
    def violations(self) -> list[Violation]:
        return self._recorder.violations

    @property
    def modules_checked(self) -> int:
        """How many distinct modules were called while the guard was active."""
        return len(self._seen)

    def __enter__(self) -> Guard:
        if self.active:
            raise RuntimeError("this guard is already active")
        self._install()
        self.active = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close(warn=exc_info[0] is None)

    def close(self, warn: bool = True) -> None:
        """Remove everything the guard installed; safe to call twice.

        With ``warn``, a guard that checked nothing, or far fewer modules than the
        model has, says so (once) with the likely reason (a call of the model that
        raised, if one did); not a guard that raised a violation, which ended the
        call there itself.
        """
        if not self.active:
            return
        self.active = False
        self._origins.clear()
        self._pending.clear()
        self._pending_down.clear()
        try:
            self._uninstall()
        finally:
            if warn:
                note = self._coverage_note()
                if note:
                    warnings.warn(note, DTypeGuardWarning, stacklevel=user_stacklevel())

    def assert_clean(self) -> None:
        """Raise :class:`DTypeViolationError` if any violation was recorded."""
        if self.violations:
            raise DTypeViolationError(self.violations, f"dtype policy {self.policy} violated:")

    def note(self, text: str) -> None:
        """Warn ``text`` once per guard: something the user should know that is not a finding."""
        if text not in self._notes:
            self._notes.add(text)
            warnings.warn(text, DTypeGuardWarning, stacklevel=user_stacklevel())

    # -- findings ---------------------------------------------------------------

    def report(self, code: str, path: str, message: str, module: Any = None) -> Violation:
        """Record (or raise) a finding unless ``allow=`` drops it; returns it either way,
        so that what it produced is still attributed to it."""
        __tracebackhide__ = True
        violation = Violation(code, path, message)
        if not (self.allow and self.allow(code, path, module)):
            self._recorder.report(violation)
        return violation

    def _origin(self, obj: Any) -> Violation | None:
        entry = self._origins.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return None

    def _mark(self, obj: Any, violation: Violation) -> None:
        key = id(obj)
        origins = self._origins
        try:
            def forget(ref: Any, key: int = key) -> None:
                if origins.get(key, (None,))[0] is ref:
                    del origins[key]

            holder: Callable[[], Any] = weakref.ref(obj, forget)
        except TypeError:  # no weak references (some tracers): kept until the guard closes
            def holder(obj: Any = obj) -> Any:
                return obj
        origins[key] = (holder, violation)

    def _accepted(self, kind: str, inputs: set[str], params: Callable[[], set[str]],
                  device_type: str) -> set[str]:
        """Activation dtypes a module of class ``kind`` may return."""
        accepted = {self.policy.compute}
        if self.policy.autocast and not autocast.is_lowered(kind):
            if autocast.runs_in_float32(kind, device_type) or not _all_narrower(inputs, params):
                accepted.add("float32")
        return accepted

    def check_activation(self, module: Any, path: str, outputs: list[tuple[Any, str]],
                         inputs: list[tuple[Any, str]], params: Callable[[], set[str]],
                         parent: tuple[str, str], device_type: str = "cuda") -> None:
        """Report what leaves the policy at ``module``; count pass-throughs under their cause.

        ``outputs``/``inputs`` pair each floating tensor with its dtype name; ``parent``
        is ``(path, class name)`` of the caller, blamed for dtypes that enter from its
        own code rather than from a submodule (once its own inputs show that they did
        not simply carry the dtype in: see :meth:`resolve_pending`).
        """
        __tracebackhide__ = True
        kind = type(module).__name__
        input_names = {name for _, name in inputs}
        accepted = self._accepted(kind, input_names, params, device_type)
        bad = [(obj, name) for obj, name in outputs if name not in accepted]
        if not bad:
            return
        fresh: dict[str, list[Any]] = {}
        for obj, name in bad:
            origin = self._origin(obj)
            if origin is not None:  # made by a submodule and already attributed
                self._downstream(origin, path)
            else:
                fresh.setdefault(name, []).append(obj)
        # Autocast lowers this module's op: float32 out of it is its own doing, whatever came in.
        lowered = self.policy.autocast and autocast.is_lowered(kind)
        new = sorted(name for name in fresh if lowered or name not in input_names)
        if new:
            cause = self._root_finding(module, kind, path, new, input_names, params)
            for name in new:
                for obj in fresh.pop(name):
                    self._mark(obj, cause)
        for name, objs in fresh.items():
            carriers = [obj for obj, n in inputs if n == name]
            origin = next((o for o in map(self._origin, carriers) if o is not None), None)
            if origin is None and any(id(obj) in self.entry_ids for obj in carriers):
                origin = self._root_finding(module, kind, path, [name], input_names, params,
                                            " (the model's own inputs)")
            elif origin is None:
                origin = self._pending_finding(parent, path, name)
                self._downstream(origin, path)
            else:
                self._downstream(origin, path)
            for obj in objs:
                self._mark(obj, origin)

    def _downstream(self, origin: Violation, path: str) -> None:
        waiting = self._pending_down.get(origin)
        if waiting is not None:
            waiting.append(path)
        else:
            self._recorder.add_downstream(origin, path)

    def _pending_finding(self, parent: tuple[str, str], child: str, name: str) -> Violation:
        """A dtype that entered ``child`` from its parent's own code: held until the parent
        returns, when its inputs tell whether it only carried the dtype on."""
        parent_path, parent_kind = parent
        held = self._pending.setdefault(parent_path, {})
        violation = held.get(name)
        if violation is None:
            message = (f"{name} activations made by {parent_kind}'s own code (outside its submodules) "
                       f"enter {child}, policy.compute is {self.policy.compute}")
            violation = Violation("DTL191", parent_path, message)
            held[name] = violation
            self._pending_down[violation] = []
        return violation

    def resolve_pending(self, path: str, inputs: list[tuple[Any, str]], module: Any = None) -> None:
        """Called when the module at ``path`` returns: the dtypes its code passed to a
        submodule are attributed to the cause its own inputs carry, else reported here."""
        __tracebackhide__ = True
        for name, held in self._pending.pop(path, {}).items():
            carriers = [obj for obj, n in inputs if n == name]
            origin = next((o for o in map(self._origin, carriers) if o is not None), None)
            paths = self._pending_down.pop(held)
            if origin is None:
                if not (self.allow and self.allow(held.code, held.module_path, module)):
                    self._recorder.report(held)
                origin = held
            else:
                for key, (holder, marked) in list(self._origins.items()):
                    if marked is held:
                        self._origins[key] = (holder, origin)
            for child in paths:
                self._downstream(origin, child)

    def flush_pending(self) -> None:
        """Report what is still held when the outermost call returns."""
        __tracebackhide__ = True
        for path in list(self._pending):
            self.resolve_pending(path, [])

    def _root_finding(self, module: Any, kind: str, path: str, bad: list[str], inputs: set[str],
                      params: Callable[[], set[str]], note: str = "") -> Violation:
        __tracebackhide__ = True
        key = ("root", path, tuple(bad), tuple(sorted(inputs)), note)
        cached = self._findings.get(key)
        if cached is not None:
            # The message is built once; later calls only count.
            if not (self.allow and self.allow(cached.code, path, module)):
                self._recorder.report(cached)
            return cached
        compute = self.policy.compute
        source = f"from inputs {', '.join(sorted(inputs))}{note}" if inputs else "from no floating input"
        if "float32" in bad and _all_narrower(inputs, params):
            param_names = params()
            code = "DTL192"
            message = (f"{kind} returned float32 {source} and params "
                       f"{', '.join(sorted(param_names)) or 'none'}")
        else:
            code = "DTL191"
            message = f"{kind} returned {', '.join(bad)} activations {source}, policy.compute is {compute}"
            if self.policy.autocast and autocast.is_lowered(kind) and "float32" in bad:
                message += f" (autocast lowers {kind}: was autocast off here, or its output cast back?)"
        violation = self.report(code, path, message, module)
        self._findings[key] = violation
        return violation

    def report_output(self, path: str, outputs: list[tuple[str, str]], inputs: set[str],
                      default: str) -> None:
        """Report floating outputs of the outermost call that do not follow ``policy.output``
        (DTL193); ``outputs`` pairs each output's field (``""`` for a bare tensor) with its
        dtype, ``default`` is the framework's default float dtype."""
        __tracebackhide__ = True
        if self.policy.output == "input" and not inputs:
            self.note(f"policy.output='input' but the call of {path} had no floating input "
                      f"(integer ids?): its outputs are checked against the default {default}")
        try:
            expected = self.policy.expected_output(inputs, default)
        except ValueError as exc:
            self.report("DTL193", path, str(exc), self.model)
            return
        bad: dict[str, list[str]] = {}
        for field, name in outputs:
            if not self.policy.accepts_output(name, expected):
                bad.setdefault(name, []).append(field)
        if bad:
            self.report("DTL193", path, output_message(bad, self.policy.output, expected), self.model)

    # -- coverage ---------------------------------------------------------------

    def _coverage_note(self) -> str | None:
        if self._recorder.raised:
            return None  # the guard ended the call itself, with the violation the user sees
        total = self._module_count()
        seen = len(self._seen)
        if seen and (total is None or seen >= COVERAGE_SHARE * total):
            return None
        what = "no module call" if not seen else f"only {seen} of the model's {total} modules"
        if self.unfinished_calls:  # the model's own error: the framework's usual suspects are not
            reasons = ["a call of the model raised before it reached the others"]
        else:
            reasons = self._coverage_reasons()
        return (f"dtype guard on {type(self.model).__name__} checked {what}; likely: "
                + "; or ".join(reasons))

    def _module_count(self) -> int | None:
        """How many modules the model has, when the framework can tell before a call."""
        return None

    def _coverage_reasons(self) -> list[str]:
        raise NotImplementedError

    def _install(self) -> None:
        raise NotImplementedError

    def _uninstall(self) -> None:
        raise NotImplementedError


def _all_narrower(inputs: set[str], params: Callable[[], set[str]]) -> bool:
    """Whether there are floating inputs and they and the params are all narrower than float32."""
    if not inputs or not all(is_narrower_than_float32(n) for n in inputs):
        return False
    return all(is_narrower_than_float32(n) for n in params())


def output_message(bad: dict[str, list[str]], output: str, expected: str) -> str:
    """The DTL193 message: each wrong dtype with the output fields that have it."""
    wanted = expected if output == expected else f"{expected} (policy.output={output})"
    parts = []
    for name, fields in sorted(bad.items()):
        named = [repr(f) for f in fields if f]
        if not named:
            parts.append(f"output is {name}")
        else:
            plural = len(named) > 1
            parts.append(f"output{'s' if plural else ''} {', '.join(named)} {'are' if plural else 'is'} {name}")
    return f"{'; '.join(parts)}, expected {wanted}"


def param_message(names: list[str], actual: str, expected: str) -> str:
    """The DTL391 message: one per module and wrong dtype, naming the parameters."""
    quoted = ", ".join(repr(name) for name in sorted(names))
    return f"parameter{'s' if len(names) > 1 else ''} {quoted} {'are' if len(names) > 1 else 'is'} " \
           f"{actual}, policy.params is {expected}"
