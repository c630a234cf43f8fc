"""The Flax side of :func:`~dtype_lint.runtime.guard`: a method interceptor.

The interceptor wraps every public method call (``__call__`` included, ``setup``
excluded) of the guarded module and its submodules during ``apply``/``init``. Under
``jax.jit`` it runs while tracing, on tracers whose dtypes are already known, so a
compiled function is checked once per trace and pays nothing afterwards.

Flax keeps interceptors on a per-thread stack and ``nn.intercept_methods`` can only
pop the top one, so guards closed in another order than the reverse of their opening
would remove each other's interceptor. A guard therefore pushes its interceptor on
the stack itself and removes exactly that one on close, wherever it sits. A guard
sees the ``apply`` calls made by the thread that entered it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dtype_lint.runtime.dtypes import dtype_name, is_floating
from dtype_lint.runtime.session import ROOT_PATH, Guard, param_message

_NOT_CONFIG = ("parent", "name")


def _floating(tree: Any) -> list[tuple[Any, str]]:
    import jax

    found = []
    for leaf in jax.tree_util.tree_leaves(tree):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and not isinstance(leaf, type):
            name = dtype_name(dtype)
            if is_floating(name):
                found.append((leaf, name))
    return found


def _field(keypath: tuple) -> str:
    parts: list[str] = []
    for entry in keypath:
        for attr in ("key", "name"):
            if hasattr(entry, attr):
                parts.append(f"{'.' if parts else ''}{getattr(entry, attr)}")
                break
        else:
            parts.append(f"[{getattr(entry, 'idx', entry)}]")
    return "".join(parts)


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


@dataclasses.dataclass
class _Frame:
    """A guarded call in progress: its scope's root, where that scope starts, its path."""

    root: Any
    base: int
    prefix: tuple[str, ...]
    path: tuple[str, ...]


class FlaxGuard(Guard):
    """Checks DTL391, DTL191, DTL192, DTL193, DTL392 and DTL393 on a Flax module."""

    def _install(self) -> None:
        from flax.linen import module as flax_module

        # Calls in progress: calls outside the guarded model (another model applied
        # meanwhile) pass through untouched.
        self._stack: list[_Frame] = []
        self._interceptor = self._intercept
        stack = flax_module._global_interceptor_stack
        stack.push(self._interceptor)
        # The entering thread's own list, so that closing from any thread finds it.
        self._thread_stack: list = stack._storage

    def _uninstall(self) -> None:
        entries = self._thread_stack
        for index in range(len(entries) - 1, -1, -1):
            if entries[index] is self._interceptor:
                del entries[index]
                break

    def _module_count(self) -> int | None:
        # Flax builds submodules during the call: the root's parameters tell how many
        # modules with parameters the model has, once it has been applied.
        return getattr(self, "_param_modules", None)

    def _coverage_reasons(self) -> list[str]:
        return [
            "a jax.jit function compiled before the guard was called (cached, not re-traced: "
            "enter the guard before its first call, or call jax.clear_caches())",
            "apply was called from another thread than the one that entered the guard "
            "(Flax interceptors are per thread)",
            "the model was not applied while the guard was active",
        ]

    def _path(self, module) -> tuple[tuple[str, ...], _Frame | None]:
        """The module's path under the guarded model, and a new frame if it starts a scope."""
        scope = module.scope
        root = scope.root if scope is not None else None
        for frame in reversed(self._stack):
            if frame.root is root:
                return frame.prefix + tuple(module.path[frame.base:]), None
        # A nested ``.apply`` (a tied head applied with another module's weights) starts
        # a scope of its own: named after the module, under the call that made it.
        prefix = self._stack[-1].path + (module.name or type(module).__name__,)
        return prefix, _Frame(root, len(module.path), prefix, prefix)

    def _intercept(self, next_fun, args, kwargs, context):
        name = context.method_name
        if name == "setup" or (name.startswith("_") and name != "__call__"):
            return next_fun(*args, **kwargs)
        module = context.module
        stack = self._stack
        if stack:
            parts, frame = self._path(module)
            is_root = False
        elif _same_config(module, self.model):
            scope = module.scope
            parts = ()
            frame = _Frame(scope.root if scope is not None else None, len(module.path), (), ())
            is_root = True
            self.unfinished_calls += 1
            self.entry_ids = {id(leaf) for leaf, _ in _floating((args, kwargs))}
        else:
            return next_fun(*args, **kwargs)
        parent = stack[-1].path if stack else ()
        pushed = frame if frame is not None else _Frame(stack[-1].root, stack[-1].base, stack[-1].prefix, parts)
        stack.append(pushed)
        try:
            output = next_fun(*args, **kwargs)
        finally:
            stack.pop()
        path = "/".join(parts) or ROOT_PATH
        self._seen.add(path)
        if self._pending:
            self.resolve_pending(path, _floating((args, kwargs)), module)
        if is_root:
            self.unfinished_calls -= 1
            self.flush_pending()
            self.entry_ids = set()
            self._param_modules = _param_modules(module.variables.get("params", {})) if module.scope else None
        # Parameters are read after the call so that ``init`` (which creates them
        # during the call) is checked too.
        self._check_params(module, path)
        if is_root:
            self._check_root_output(path, args, kwargs, output)
        else:
            parent_module = module.parent if module.parent is not None else self.model
            self._check_activation(module, path, ("/".join(parent) or ROOT_PATH, type(parent_module).__name__),
                                   args, kwargs, output)
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
        compute_name = dtype_name(compute) if compute is not None else None
        off_policy: dict[str, list[str]] = {}
        recast: dict[str, list[str]] = {}
        for name, value in self._own_params(module).items():
            actual = dtype_name(value.dtype)
            if not is_floating(actual):
                continue
            if actual != self.policy.params:
                off_policy.setdefault(actual, []).append(name)
            # A recast to the module's own compute dtype is Flax's documented route
            # (Hugging Face's ``to_bf16``): the module computes in that dtype either way.
            if configured is not None and actual != configured and actual != compute_name:
                recast.setdefault(actual, []).append(name)
        kind = type(module).__name__
        for actual, names in off_policy.items():
            self.report("DTL391", path, param_message(names, actual, self.policy.params), module)
        for actual, names in recast.items():
            quoted = ", ".join(repr(name) for name in sorted(names))
            if compute is not None:
                self.report(
                    "DTL393", path,
                    f"{quoted} recast to {actual} (param_dtype={configured}) cannot take effect: "
                    f"{kind}.dtype={compute_name} sets the compute dtype", module,
                )
            else:
                self.report(
                    "DTL392", path,
                    f"{quoted} {'are' if len(names) > 1 else 'is'} {actual} but {kind}.param_dtype is "
                    f"{configured}: recast outside the module's configuration", module,
                )

    def _check_activation(self, module, path: str, parent: tuple[str, str], args, kwargs, output) -> None:
        __tracebackhide__ = True
        outputs = _floating(output)
        if not outputs or all(name == self.policy.compute for _, name in outputs):
            return
        self.check_activation(
            module, path, outputs, _floating((args, kwargs)),
            lambda: {name for _, name in _floating(module.variables.get("params", {}))} if module.scope else set(),
            parent,
        )

    def _check_root_output(self, path: str, args, kwargs, output) -> None:
        __tracebackhide__ = True
        import jax

        flat, _ = jax.tree_util.tree_flatten_with_path(output)
        outputs = [(_field(keypath), dtype_name(leaf.dtype)) for keypath, leaf in flat
                   if getattr(leaf, "dtype", None) is not None and is_floating(dtype_name(leaf.dtype))]
        if not outputs:
            return
        default = dtype_name(jax.dtypes.canonicalize_dtype(float))
        inputs = {name for _, name in _floating((args, kwargs))}
        self.report_output(path, outputs, inputs, default)


def _param_modules(params: Mapping) -> int:
    """How many modules of a parameter tree hold parameters of their own (the root too)."""
    own = any(not isinstance(value, Mapping) for value in params.values())
    return int(own) + sum(_param_modules(value) for value in params.values() if isinstance(value, Mapping))
