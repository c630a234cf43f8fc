"""``check_picklable``: will this object survive the trip to a spawned worker?

``spawn`` and ``forkserver`` send the worker's target, dataset, ``collate_fn`` and
so on through the standard pickler. When that fails, the error names a type
("Can't pickle <function <lambda>>") but not where it lives; this module walks the
object and names the attribute path of every culprit.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import sys
import types
from collections.abc import Iterator, Mapping

from dtype_lint.runtime.violations import DTypeViolationError, Violation

# DataLoader attributes that a worker process receives; the loader itself is never
# sent, so its other attributes (iterators, generators) are irrelevant.
_LOADER_PARTS = ("dataset", "sampler", "batch_sampler", "collate_fn", "worker_init_fn")
_MAX_DEPTH = 12


@dataclasses.dataclass(frozen=True)
class PicklingProblem:
    """One object that cannot be pickled: where it is, what it is, and the error."""

    path: str
    culprit: str
    error: str
    code: str = "DTL291"

    def __str__(self) -> str:
        return f"{self.path}: {self.culprit}"


class UnpicklableError(DTypeViolationError):
    """Raised by :func:`assert_picklable`; ``.problems`` lists every culprit."""

    def __init__(self, problems: list[PicklingProblem], root: str) -> None:
        self.problems = list(problems)
        super().__init__(
            [Violation(p.code, p.path, f"{p.culprit} ({p.error})") for p in problems],
            f"{root} cannot be pickled for a spawned worker:",
        )


class _Discard(io.RawIOBase):
    # Pickling a large model into memory only to throw the bytes away doubles its
    # footprint; the pickler writes here instead.
    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        return len(data)


def _pickle_error(obj: object) -> str | None:
    try:
        pickle.Pickler(_Discard(), protocol=pickle.DEFAULT_PROTOCOL).dump(obj)
    except RecursionError:
        return "RecursionError: object graph too deep to pickle"
    except Exception as exc:  # pickle raises many types: PicklingError, TypeError, AttributeError
        return f"{type(exc).__name__}: {exc}"
    return None


def _where(code: types.CodeType) -> str:
    filename = code.co_filename
    try:
        relative = os.path.relpath(filename)
        if not relative.startswith(".."):
            filename = relative
    except ValueError:  # another drive on Windows
        pass
    return f"{filename}:{code.co_firstlineno}"


def describe(obj: object) -> str:
    """A short description that says what the culprit is and, for code, where it was defined."""
    function = obj.__func__ if isinstance(obj, types.MethodType) else obj
    if isinstance(function, types.FunctionType):
        name = "<lambda>" if function.__name__ == "<lambda>" else function.__qualname__ + "()"
        return f"{name} defined at {_where(function.__code__)}"
    if isinstance(obj, types.GeneratorType):
        return f"generator {obj.__qualname__}() defined at {_where(obj.gi_code)}"
    if isinstance(obj, type):
        return f"class {obj.__qualname__} defined in {obj.__module__}"
    return f"{type(obj).__module__}.{type(obj).__qualname__} object"


def _is_loader(obj: object) -> bool:
    data = sys.modules.get("torch.utils.data")
    return data is not None and isinstance(obj, data.DataLoader)


def _is_module(obj: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def _children(obj: object) -> Iterator[tuple[str, object, str]]:
    """``(name, child, separator)`` for the parts of ``obj`` a pickler would visit."""
    if _is_loader(obj):
        for name in _LOADER_PARTS:
            yield name, getattr(obj, name, None), "."
        return
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            yield repr(key), value, "["
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        for index, value in enumerate(obj):
            yield str(index), value, "["
        return
    if isinstance(obj, types.MethodType):
        yield "__self__", obj.__self__, "."
        yield "__func__", obj.__func__, "."
        return
    if isinstance(obj, types.FunctionType):
        # A closure is unpicklable as a whole; its cells say nothing about where it lives.
        return
    if _is_module(obj):
        for name, child in getattr(obj, "_modules").items():
            yield name, child, "."
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        for name, value in attributes.items():
            if _is_module(obj) and name == "_modules":
                continue
            yield name, value, "."
    for slot in getattr(type(obj), "__slots__", ()):
        if isinstance(slot, str) and hasattr(obj, slot):
            yield slot, getattr(obj, slot), "."


def _join(path: str, name: str, separator: str) -> str:
    return f"{path}[{name}]" if separator == "[" else f"{path}.{name}"


def _walk(obj: object, path: str, error: str, seen: set[int], depth: int) -> list[PicklingProblem]:
    seen.add(id(obj))
    found = False
    below: list[PicklingProblem] = []
    if depth < _MAX_DEPTH:
        for name, child, separator in _children(obj):
            if child is None:
                continue
            child_error = _pickle_error(child)
            if child_error is None:
                continue
            found = True
            # An object reached twice (a sampler's data_source is the dataset) is
            # reported once, under the first path.
            if id(child) not in seen:
                below += _walk(child, _join(path, name, separator), child_error, seen, depth + 1)
    if not found:
        # No part fails on its own: this object itself is what the pickler rejects.
        return [PicklingProblem(path, describe(obj), error)]
    if hasattr(obj, "__dict__") and not isinstance(obj, (type, types.FunctionType)):
        # Instances are pickled with a reference to their class: a class defined in a
        # function fails on its own, besides whatever its attributes hold.
        class_error = _pickle_error(type(obj))
        if class_error is not None:
            below.insert(0, PicklingProblem(path, f"instance of {describe(type(obj))}", class_error))
    return below


def check_picklable(obj: object, name: str = "obj") -> list[PicklingProblem]:
    """Pickle ``obj`` as ``spawn``/``forkserver`` would; on failure, name each culprit.

    Returns an empty list when ``obj`` pickles. ``name`` is the root of the reported
    paths (``check_picklable(model, "model")`` reports ``model.head.act: ...``). For a
    ``DataLoader``, what the worker receives is checked: its dataset, sampler,
    batch sampler, ``collate_fn`` and ``worker_init_fn``.
    """
    if _is_loader(obj):
        problems: list[PicklingProblem] = []
        seen = {id(obj)}
        for part, child, separator in _children(obj):
            if child is not None:
                error = _pickle_error(child)
                if error is not None:
                    problems.extend(_walk(child, _join(name, part, separator), error, seen, 1))
        return problems
    error = _pickle_error(obj)
    if error is None:
        return []
    return _walk(obj, name, error, set(), 0)


def assert_picklable(obj: object, name: str = "obj") -> None:
    """Raise :class:`UnpicklableError` (an ``AssertionError``) naming every culprit."""
    problems = check_picklable(obj, name)
    if problems:
        raise UnpicklableError(problems, name)
