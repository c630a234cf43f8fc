"""Copies and pickles of a guarded torch model come out without the guard's wrappers.

:class:`~dtype_lint.runtime.torch_guard.TorchGuard` wraps each module's ``forward``
on the instance, so the wrapper sits in the module's ``__dict__``: a closure that
``pickle`` (``torch.save``, a spawned worker) cannot serialise, and that
``copy.deepcopy`` (an EMA copy) would carry over still bound to the original module.
While a guard is active, the module types it wrapped are registered in
``copyreg.dispatch_table``, which ``pickle``, ``torch.save``, ``multiprocessing`` and
``copy.copy``/``copy.deepcopy`` all consult before a type's own reduction. The
reducer takes the type's usual reduction and puts back in its state what ``forward``
was before any guard wrapped it, so a copy is the model as it would be unguarded.
"""

from __future__ import annotations

import copyreg
import threading
from collections.abc import Iterable
from typing import Any

#: The attribute a guard's wrapper carries: ``(live flag, what forward was before)``.
GUARD_MARK = "dtype_lint_guard"
#: ``forward`` was not in the instance's ``__dict__`` before the guard (the usual case).
ABSENT = object()

_lock = threading.Lock()
# type -> [guards that registered it, the reducer it had before, or None]
_registered: dict[type, list[Any]] = {}


def unwrapped(forward: Any) -> Any:
    """What an instance's ``forward`` was under every guard wrapper on it (or ``ABSENT``)."""
    while callable(forward) and hasattr(forward, GUARD_MARK):
        forward = getattr(forward, GUARD_MARK)[1]
    return forward


def _reduce(obj: Any) -> Any:
    cls = type(obj)
    entry = _registered.get(cls)
    previous = entry[1] if entry else None
    reduced = previous(obj) if previous is not None else cls.__reduce_ex__(obj, 4)
    if not (isinstance(reduced, tuple) and len(reduced) > 2 and isinstance(reduced[2], dict)):
        return reduced
    forward = reduced[2].get("forward")
    if forward is None or not hasattr(forward, GUARD_MARK):
        return reduced
    state = dict(reduced[2])
    original = unwrapped(forward)
    if original is ABSENT:
        del state["forward"]
    else:
        state["forward"] = original
    return (*reduced[:2], state, *reduced[3:])


def register(types: Iterable[type]) -> None:
    """Strip guard wrappers when instances of ``types`` are pickled or copied."""
    with _lock:
        for cls in types:
            entry = _registered.get(cls)
            if entry is None:
                _registered[cls] = [1, copyreg.dispatch_table.get(cls)]
                copyreg.dispatch_table[cls] = _reduce
            else:
                entry[0] += 1


def unregister(types: Iterable[type]) -> None:
    """Undo one :func:`register` of ``types``; the last one restores the previous reducer."""
    with _lock:
        for cls in types:
            entry = _registered.get(cls)
            if entry is None:
                continue
            entry[0] -= 1
            if entry[0] > 0:
                continue
            del _registered[cls]
            if copyreg.dispatch_table.get(cls) is not _reduce:
                continue  # replaced by other code since: leave theirs
            if entry[1] is None:
                del copyreg.dispatch_table[cls]
            else:
                copyreg.dispatch_table[cls] = entry[1]
