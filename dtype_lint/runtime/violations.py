"""What the runtime checks report, and how a guard records, warns about or raises them."""

from __future__ import annotations

import dataclasses
import threading
import warnings

from dtype_lint.runtime.codes import get_check

ON_VIOLATION = ("raise", "warn", "record")


@dataclasses.dataclass(frozen=True)
class Violation:
    """One finding: a DTL code, where it happened (module or tree path) and what."""

    code: str
    module_path: str
    message: str

    @property
    def name(self) -> str:
        return get_check(self.code).name

    def __str__(self) -> str:
        return f"{self.code} {self.module_path}: {self.message}"


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
    """Emitted once per distinct violation by a guard in ``"warn"`` mode."""


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

    def report(self, code: str, module_path: str, message: str) -> None:
        __tracebackhide__ = True
        violation = Violation(code, module_path, message)
        with self._lock:
            first = violation not in self._counts
            self._counts[violation] = self._counts.get(violation, 0) + 1
        if self.on_violation == "raise":
            raise DTypeViolationError([violation])
        if self.on_violation == "warn" and first:
            warnings.warn(str(violation), DTypeGuardWarning, stacklevel=3)

    @property
    def violations(self) -> list[Violation]:
        with self._lock:
            return list(self._counts)

    def count(self, violation: Violation) -> int:
        with self._lock:
            return self._counts.get(violation, 0)
