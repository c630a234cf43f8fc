"""Runtime dtype checks: what a model actually does when it runs.

Static rules see what code says; these checks watch real tensors. torch and
jax/flax are optional extras and are imported only inside the functions that need
them (or recognised through ``sys.modules``), so importing this package imports
neither.
"""

from __future__ import annotations

from dtype_lint.runtime.codes import RUNTIME_CHECKS, get_check
from dtype_lint.runtime.device import device_report, format_report
from dtype_lint.runtime.guard import Guard, guard
from dtype_lint.runtime.picklable import (
    PicklingProblem,
    UnpicklableError,
    assert_picklable,
    check_picklable,
)
from dtype_lint.runtime.policy import Policy
from dtype_lint.runtime.probe import DeviceUnavailableError, MatmulPrecision, matmul_precision
from dtype_lint.runtime.tree import TreeDTypeError, TreeMismatch, assert_tree_dtypes, check_tree
from dtype_lint.runtime.violations import DTypeGuardWarning, DTypeViolationError, Violation

__all__ = [
    "RUNTIME_CHECKS",
    "DTypeGuardWarning",
    "DeviceUnavailableError",
    "DTypeViolationError",
    "Guard",
    "MatmulPrecision",
    "PicklingProblem",
    "Policy",
    "TreeDTypeError",
    "TreeMismatch",
    "UnpicklableError",
    "Violation",
    "assert_picklable",
    "assert_tree_dtypes",
    "check_picklable",
    "check_tree",
    "device_report",
    "format_report",
    "get_check",
    "guard",
    "matmul_precision",
]
