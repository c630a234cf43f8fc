"""``guard(model, policy)``: watch every module call of a torch or Flax model.

The framework-specific work lives in :mod:`~dtype_lint.runtime.torch_guard` and
:mod:`~dtype_lint.runtime.flax_guard`, on the shared base in
:mod:`~dtype_lint.runtime.session`; this module picks one from the model's type
(looked up in ``sys.modules``, so neither framework is imported here).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from dtype_lint.runtime.policy import Policy
from dtype_lint.runtime.session import Guard

__all__ = ["Guard", "guard"]


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


def guard(model: object, policy: Policy | str, on_violation: str = "raise",
          allow: Iterable[Any] | str | type | None = None) -> Guard:
    """A guard for ``model`` (a ``torch.nn.Module``, a Flax ``nn.Module``, or a Hugging
    Face Flax model, whose ``.module`` is guarded).

    Use it as a context manager: checks run on every call of the model and its
    submodules while it is active, and ``on_violation`` says whether a violation
    raises :class:`DTypeViolationError`, warns (once per distinct violation) or is
    only recorded in ``.violations``. ``allow`` drops findings by check code, module
    path glob or module class (see :class:`~dtype_lint.runtime.allow.Allow`).
    """
    if _is_instance(model, "torch", "nn.Module"):
        from dtype_lint.runtime.torch_guard import TorchGuard

        return TorchGuard(model, policy, on_violation, allow)
    if _is_instance(model, "flax.linen", "Module"):
        from dtype_lint.runtime.flax_guard import FlaxGuard

        return FlaxGuard(model, policy, on_violation, allow)
    # Hugging Face's Flax models wrap the linen module they apply in ``.module``.
    inner = getattr(model, "module", None)
    if inner is not None and _is_instance(inner, "flax.linen", "Module"):
        from dtype_lint.runtime.flax_guard import FlaxGuard

        return FlaxGuard(inner, policy, on_violation, allow)
    hint = ""
    if callable(model) and hasattr(model, "lower"):
        hint = ("; for a jax.jit function, pass the Flax module whose apply it calls")
    raise TypeError(f"guard() needs a torch.nn.Module, a flax.linen.Module or a model that holds "
                    f"one in .module (Hugging Face Flax models), got {type(model).__name__}{hint}")
