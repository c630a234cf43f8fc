"""What the runtime checks report, and how a guard records, warns about or raises them."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
import warnings
from types import FrameType

from dtype_lint.runtime.codes import get_check

ON_VIOLATION = ("raise", "warn", "record")

# Frames in this package and in these frameworks are the guard's and the frameworks'
# own machinery: a warning points at the first frame outside them, the user's call.
_RUNTIME_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")
_FRAMEWORKS = ("torch", "flax", "jax", "jaxlib", "transformers", "timm")


def _internal(filename: str) -> bool:
    if filename.startswith(_RUNTIME_DIR) or filename == contextlib.__file__:
        return True
    for name in _FRAMEWORKS:
        paths = getattr(sys.modules.get(name), "__path__", None)
        if paths and filename.startswith(os.path.join(paths[0], "")):
            return True
    return False


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called by our caller that names the user's frame."""
    frame: FrameType | None = sys._getframe(2)  # the caller of the function that calls this one
    level = 2
    while frame is not None and _internal(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level


@dataclasses.dataclass(frozen=True)
class Violation:
    """One finding: a DTL code, where it happened (module or tree path) and what.

    ``count`` is how many calls reported it; ``downstream`` names the modules that
    only passed its dtype on (they are counted here instead of being reported).
    Neither takes part in equality, so one finding compares equal across calls.
    """

    code: str
    module_path: str
    message: str
    count: int = dataclasses.field(default=1, compare=False)
    downstream: tuple[str, ...] = dataclasses.field(default=(), compare=False)

    @property
    def name(self) -> str:
        return get_check(self.code).name

    def __str__(self) -> str:
        text = f"{self.code} {self.module_path}: {self.message}"
        if self.downstream:
            n = len(self.downstream)
            text += f" ... and {n} module{'s' if n > 1 else ''} downstream"
        return text


class DTypeViolationError(AssertionError):
    """Raised by a guard in ``"raise"`` mode, or by an ``assert_*`` helper."""

    def __init__(self, violations: list[Violation], header: str = "") -> None:
        self.violations = list(violations)
        if not header and len(self.violations) == 1:
            super().__init__(str(self.violations[0]))
            return
        lines = [header] if header else []
        lines += [f"  {v}" for v in self.violations]
        super().__init__("\n".join(lines))


class DTypeGuardWarning(UserWarning):
    """Emitted once per distinct violation by a guard in ``"warn"`` mode, and when a
    guard checked nothing (or far less than the model has)."""


class Recorder:
    """Keeps distinct violations (thread-safe) and applies the ``on_violation`` mode.

    A module called a thousand times with the same problem is one violation with a
    count, so that records stay readable and warnings are not repeated.
    """

    def __init__(self, on_violation: str) -> None:
        if on_violation not in ON_VIOLATION:
            raise ValueError(f"on_violation must be one of {ON_VIOLATION}, got {on_violation!r}")
        self.on_violation = on_violation
        self._lock = threading.Lock()
        self._counts: dict[Violation, int] = {}
        self._downstream: dict[Violation, dict[str, None]] = {}
        self.raised = False  # whether a violation was raised (and ended the call it was raised in)

    def report(self, violation: Violation) -> None:
        __tracebackhide__ = True
        with self._lock:
            first = violation not in self._counts
            self._counts[violation] = self._counts.get(violation, 0) + 1
        if self.on_violation == "raise":
            self.raised = True
            raise DTypeViolationError([violation])
        if self.on_violation == "warn" and first:
            warnings.warn(str(violation), DTypeGuardWarning, stacklevel=user_stacklevel())

    def add_downstream(self, violation: Violation, module_path: str) -> None:
        """Count ``module_path`` as passing on what ``violation`` reported (no new finding)."""
        with self._lock:
            if violation in self._counts:
                self._downstream.setdefault(violation, {})[module_path] = None

    @property
    def violations(self) -> list[Violation]:
        with self._lock:
            return [dataclasses.replace(v, count=n, downstream=tuple(self._downstream.get(v, ())))
                    for v, n in self._counts.items()]

    def count(self, violation: Violation) -> int:
        with self._lock:
            return self._counts.get(violation, 0)
