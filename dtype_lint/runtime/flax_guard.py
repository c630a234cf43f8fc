"""The Flax side of :func:`~dtype_lint.runtime.guard`: an ``nn.intercept_methods`` interceptor.

The interceptor wraps every public method call (``__call__`` included, ``setup``
excluded) of the guarded module and its submodules during ``apply``/``init``. Under
``jax.jit`` it runs while tracing, on tracers whose dtypes are already known, so a
compiled function is checked once per trace and pays nothing afterwards.

Flax keeps interceptors per thread, so a guard sees the ``apply`` calls made by the
thread that entered it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dtype_lint.runtime.dtypes import dtype_name, is_floating
from dtype_lint.runtime.guard import ROOT_PATH, Guard, param_message

_NOT_CONFIG = ("parent", "name")


def _floating_names(tree: Any) -> set[str]:
    import jax

    names = set()
    for leaf in jax.tree_util.tree_leaves(tree):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and not isinstance(leaf, type):
            name = dtype_name(dtype)
            if is_floating(name):
                names.add(name)
    return names


def _same_config(a: Any, b: Any) -> bool:
    """Whether bound module ``a`` is a clone of the user's module ``b``.

    ``apply`` runs a bound clone, never the instance the user holds, so the guarded
    module is recognised by its type and its configuration fields.
    """
    if type(a) is not type(b):
        return False
    for field in dataclasses.fields(b):
        if field.name in _NOT_CONFIG:
            continue
        x, y = getattr(a, field.name, None), getattr(b, field.name, None)
        if x is y:
            continue
        try:
            if not bool(x == y):
                return False
        except Exception:  # arrays and other values without a plain truth value
            return False
    return True


class FlaxGuard(Guard):
    """Checks DTL391, DTL191, DTL192, DTL193, DTL392 and DTL393 on a Flax module."""

    def _install(self) -> None:
        import flax.linen as nn

        # Paths of the guarded calls in progress: calls outside the guarded model
        # (another model applied meanwhile) must pass through untouched.
        self._stack: list[tuple[str, ...]] = []
        self._context: Any = nn.intercept_methods(self._intercept)
        self._context.__enter__()

    def _uninstall(self) -> None:
        context, self._context = self._context, None
        context.__exit__(None, None, None)

    def _intercept(self, next_fun, args, kwargs, context):
        name = context.method_name
        if name == "setup" or (name.startswith("_") and name != "__call__"):
            return next_fun(*args, **kwargs)
        module = context.module
        stack = self._stack
        if stack:
            path = "/".join(module.path[len(stack[0]):]) or ROOT_PATH
            is_root = False
        elif _same_config(module, self.model):
            path, is_root = ROOT_PATH, True
        else:
            return next_fun(*args, **kwargs)
        stack.append(tuple(module.path))
        try:
            output = next_fun(*args, **kwargs)
        finally:
            stack.pop()
        # Parameters are read after the call so that ``init`` (which creates them
        # during the call) is checked too.
        self._check_params(module, path)
        if is_root:
            self._check_root_output(path, args, kwargs, output)
        else:
            self._check_activation(module, path, args, kwargs, output)
        return output

    def _own_params(self, module) -> dict[str, Any]:
        if module.scope is None:
            return {}
        params = module.variables.get("params", {})
        return {k: v for k, v in params.items() if not isinstance(v, Mapping)}

    def _check_params(self, module, path: str) -> None:
        __tracebackhide__ = True
        param_dtype = getattr(module, "param_dtype", None)
        configured = dtype_name(param_dtype) if param_dtype is not None else None
        compute = getattr(module, "dtype", None)
        off_policy: dict[str, list[str]] = {}
        recast: dict[str, list[str]] = {}
        for name, value in self._own_params(module).items():
            actual = dtype_name(value.dtype)
            if not is_floating(actual):
                continue
            if actual != self.policy.params:
                off_policy.setdefault(actual, []).append(name)
            if configured is not None and actual != configured:
                recast.setdefault(actual, []).append(name)
        kind = type(module).__name__
        for actual, names in off_policy.items():
            self._recorder.report("DTL391", path, param_message(names, actual, self.policy.params))
        for actual, names in recast.items():
            quoted = ", ".join(repr(name) for name in sorted(names))
            if compute is not None:
                self._recorder.report(
                    "DTL393", path,
                    f"{quoted} recast to {actual} (param_dtype={configured}) cannot take effect: "
                    f"{kind}.dtype={dtype_name(compute)} sets the compute dtype",
                )
            else:
                self._recorder.report(
                    "DTL392", path,
                    f"{quoted} {'are' if len(names) > 1 else 'is'} {actual} but {kind}.param_dtype is "
                    f"{configured}: recast outside the module's configuration",
                )

    def _check_activation(self, module, path: str, args, kwargs, output) -> None:
        __tracebackhide__ = True
        bad = sorted(_floating_names(output) - {self.policy.compute})
        if not bad:
            return
        self._report_activation(
            module, path, bad, _floating_names((args, kwargs)),
            lambda: _floating_names(module.variables.get("params", {})) if module.scope else set(),
        )

    def _check_root_output(self, path: str, args, kwargs, output) -> None:
        __tracebackhide__ = True
        import jax

        outputs = _floating_names(output)
        if not outputs:
            return
        default = dtype_name(jax.dtypes.canonicalize_dtype(float))
        self._report_output(path, outputs, _floating_names((args, kwargs)), default)
