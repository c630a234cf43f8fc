"""``guard(model, policy)``: watch every module call of a torch or Flax model.

The framework-specific work lives in :mod:`~dtype_lint.runtime.torch_guard` and
:mod:`~dtype_lint.runtime.flax_guard`; this module picks one from the model's type
(looked up in ``sys.modules``, so neither framework is imported here).
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from dtype_lint.runtime.dtypes import is_narrower_than_float32
from dtype_lint.runtime.policy import Policy
from dtype_lint.runtime.violations import DTypeViolationError, Recorder, Violation

ROOT_PATH = "(root)"


class Guard:
    """An installable set of checks; a context manager that removes itself on exit.

    ``.violations`` lists the distinct violations seen so far, each with ``.code``,
    ``.module_path`` and ``.message``.
    """

    def __init__(self, model: Any, policy: Policy | str, on_violation: str = "raise") -> None:
        self.model = model
        self.policy = Policy.coerce(policy)
        self._recorder = Recorder(on_violation)
        self.active = False

    @property
    def on_violation(self) -> str:
        return self._recorder.on_violation

    @property
    def violations(self) -> list[Violation]:
        return self._recorder.violations

    def __enter__(self) -> Guard:
        if self.active:
            raise RuntimeError("this guard is already active")
        self._install()
        self.active = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove everything the guard installed; safe to call twice."""
        if self.active:
            self.active = False
            self._uninstall()

    def assert_clean(self) -> None:
        """Raise :class:`DTypeViolationError` if any violation was recorded."""
        if self.violations:
            raise DTypeViolationError(self.violations, f"dtype policy {self.policy} violated:")

    def _report_activation(self, module: Any, path: str, bad: list[str], inputs: set[str],
                           params: Callable[[], set[str]]) -> None:
        """Report outputs outside ``policy.compute``: silent widening (DTL192) when float32
        came out of inputs and params that are all narrower, else DTL191."""
        __tracebackhide__ = True
        if "float32" in bad and inputs:
            param_names = params()
            if all(is_narrower_than_float32(n) for n in inputs | param_names):
                self._recorder.report(
                    "DTL192", path,
                    f"{type(module).__name__} returned float32 from inputs "
                    f"{', '.join(sorted(inputs))} and params {', '.join(sorted(param_names)) or 'none'}",
                )
                return
        self._recorder.report(
            "DTL191", path,
            f"{type(module).__name__} returned {', '.join(bad)} activations, "
            f"policy.compute is {self.policy.compute}",
        )

    def _report_output(self, path: str, outputs: set[str], inputs: set[str], default: str) -> None:
        """Report floating outputs of the outermost call that do not follow ``policy.output``
        (DTL193); ``default`` is the framework's default float dtype."""
        __tracebackhide__ = True
        try:
            expected = self.policy.expected_output(inputs, default)
        except ValueError as exc:
            self._recorder.report("DTL193", path, str(exc))
            return
        bad = sorted(outputs - {expected})
        if bad:
            self._recorder.report("DTL193", path, output_message(bad, self.policy.output, expected))

    def _install(self) -> None:
        raise NotImplementedError

    def _uninstall(self) -> None:
        raise NotImplementedError


def output_message(bad: list[str], output: str, expected: str) -> str:
    """The DTL193 message shared by the torch and Flax guards."""
    wanted = expected if output == expected else f"{expected} (policy.output={output})"
    return f"output is {', '.join(bad)}, expected {wanted}"


def param_message(names: list[str], actual: str, expected: str) -> str:
    """The DTL391 message: one per module and wrong dtype, naming the parameters."""
    quoted = ", ".join(repr(name) for name in sorted(names))
    return f"parameter{'s' if len(names) > 1 else ''} {quoted} {'are' if len(names) > 1 else 'is'} " \
           f"{actual}, policy.params is {expected}"


def _is_instance(obj: object, module_name: str, attr_path: str) -> bool:
    module = sys.modules.get(module_name)
    if module is None:
        return False
    cls: Any = module
    for attr in attr_path.split("."):
        cls = getattr(cls, attr, None)
        if cls is None:
            return False
    return isinstance(obj, cls)


def guard(model: object, policy: Policy | str, on_violation: str = "raise") -> Guard:
    """A guard for ``model`` (a ``torch.nn.Module`` or a Flax ``nn.Module``).

    Use it as a context manager: checks run on every call of the model and its
    submodules while it is active, and ``on_violation`` says whether a violation
    raises :class:`DTypeViolationError`, warns (once per distinct violation) or is
    only recorded in ``.violations``.
    """
    if _is_instance(model, "torch", "nn.Module"):
        from dtype_lint.runtime.torch_guard import TorchGuard

        return TorchGuard(model, policy, on_violation)
    if _is_instance(model, "flax.linen", "Module"):
        from dtype_lint.runtime.flax_guard import FlaxGuard

        return FlaxGuard(model, policy, on_violation)
    raise TypeError(f"guard() needs a torch.nn.Module or a flax.linen.Module, got {type(model).__name__}")
