"""The torch side of :func:`~dtype_lint.runtime.guard`: a check after every module call.

Every submodule's ``forward`` is wrapped on enter and restored on exit (see
``TorchGuard._watch``), so that a model that is not guarded runs exactly as before
and pays nothing; pickles and copies taken meanwhile leave the wrappers out (see
:mod:`~dtype_lint.runtime.torch_copies`). A check only compares ``tensor.dtype`` objects (no sync, no allocation) unless something is
off; the slower analysis that builds the message runs only then, once per distinct
finding. Frames here set ``__tracebackhide__`` so that pytest shows a violation at
the user's model code.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from typing import Any

from dtype_lint.runtime import autocast, torch_copies
from dtype_lint.runtime.dtypes import dtype_name, torch_dtype
from dtype_lint.runtime.session import ROOT_PATH, Guard, param_message


def _tensors(obj: Any, tensor_type: type, field: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """``(field, tensor)`` for the tensors in ``obj``: ``field`` is ``""`` for ``obj``
    itself, else a dict key (a Hugging Face output's ``logits``) or ``[index]``."""
    if isinstance(obj, tensor_type):
        yield field, obj
    elif depth < 4:
        if isinstance(obj, (tuple, list)):
            for index, item in enumerate(obj):
                yield from _tensors(item, tensor_type, f"{field}[{index}]", depth + 1)
        elif isinstance(obj, dict):
            for key, item in obj.items():
                yield from _tensors(item, tensor_type, f"{field}.{key}" if field else str(key), depth + 1)


_ABSENT = torch_copies.ABSENT
_NAMES: dict[Any, str] = {}


def _name(dtype: Any) -> str:
    """``dtype_name`` of a torch dtype, memoised: the slow path asks for it on every call."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = dtype_name(dtype)
    return name


def _floating(obj: Any, tensor_type: type) -> list[tuple[Any, str]]:
    return [(t, _name(t.dtype)) for _, t in _tensors(obj, tensor_type) if t.dtype.is_floating_point]


class TorchGuard(Guard):
    """Checks DTL391, DTL191, DTL192 and DTL193 on a ``torch.nn.Module``."""

    def _install(self) -> None:
        import torch

        self._torch = torch
        self._params_dtype = torch_dtype(self.policy.params)
        self._compute_dtype = torch_dtype(self.policy.compute)
        self._handles: list[Any] = []
        self._wrapped: list[tuple[Any, Any, Any]] = []
        self._copyable: set[type] = set()
        self._live = [True]
        modules = dict(self.model.named_modules())
        self._hooked = {id(module) for module in modules.values()}
        # Parameters of the whole model are checked once per call of the model, before
        # it runs (a wrong dtype often makes the forward itself fail, and the report
        # should still be made): one loop there costs less than a check per module.
        self._with_params = [(path or ROOT_PATH, module) for path, module in modules.items()
                             if module._parameters]
        try:
            for path, module in modules.items():
                parent = path.rpartition(".")[0]
                parent_info = (parent or ROOT_PATH, type(modules[parent]).__name__)
                path = path or ROOT_PATH
                if module is self.model:
                    self._watch(module, self._make_root_hook(path), self._root_pre_hook)
                else:
                    self._watch(module, self._make_hook(path, module, parent_info))
            # Pickles and copies made while the guard is active leave the wrappers out.
            self._copyable = {type(module) for module, _, _ in self._wrapped}
            torch_copies.register(self._copyable)
        except BaseException:
            self._uninstall()
            raise

    def _watch(self, module, hook, pre_hook=None) -> None:
        """Run ``hook(module, args, kwargs, output)`` after each call of ``module``.

        The module's ``forward`` is wrapped on the instance rather than hooked: torch
        runs a module with hooks through a slower path that costs several times what
        the checks themselves do. ``functools.wraps`` keeps the signature that
        libraries inspect (Hugging Face's ``generate`` does). Modules whose ``forward``
        cannot be set (TorchScript) get forward hooks instead.
        """
        inner = module.forward
        previous = module.__dict__.get("forward", _ABSENT)
        live = self._live

        @functools.wraps(inner)
        def forward(*args, **kwargs):
            __tracebackhide__ = True
            if not live[0]:  # closed, but other code wrapped forward over this one
                return inner(*args, **kwargs)
            if pre_hook is not None:
                pre_hook(module, args)
            output = inner(*args, **kwargs)
            hook(module, args, kwargs, output)
            return output

        # Read by a guard that closes later and finds this wrapper, closed, below it, and
        # by torch_copies, which leaves every guard's wrapper out of a pickle or a copy.
        setattr(forward, torch_copies.GUARD_MARK, (live, previous))
        try:
            object.__setattr__(module, "forward", forward)
        except (AttributeError, TypeError, RuntimeError):
            if pre_hook is not None:
                self._handles.append(module.register_forward_pre_hook(pre_hook))
            self._handles.append(module.register_forward_hook(hook, with_kwargs=True))
            return
        self._wrapped.append((module, forward, previous))

    def _uninstall(self) -> None:
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()
        wrapped, self._wrapped = self._wrapped, []
        torch_copies.unregister(self._copyable)
        self._copyable = set()
        self._live[0] = False
        self._live = [True]
        for module, forward, previous in wrapped:
            if module.__dict__.get("forward") is not forward:
                continue  # wrapped again by other code since: ours stays a pass-through
            # Guards closed out of order left their wrappers below this one: skip them.
            while getattr(previous, torch_copies.GUARD_MARK, (None,))[0] == [False]:
                previous = getattr(previous, torch_copies.GUARD_MARK)[1]
            if previous is _ABSENT:
                del module.__dict__["forward"]
            else:
                module.__dict__["forward"] = previous

    def _module_count(self) -> int | None:
        # Counted now, so that modules added while the guard was active count too.
        return sum(1 for _ in self.model.modules())

    def _coverage_reasons(self) -> list[str]:
        reasons = []
        added = [path for path, module in self.model.named_modules() if id(module) not in self._hooked]
        if added:
            reasons.append(f"{len(added)} module(s) were added after the guard was entered and are "
                           f"not watched ({', '.join(added[:3])}{', ...' if len(added) > 3 else ''})")
        dynamo = sys.modules.get("torch._dynamo")
        if dynamo is not None or getattr(self.model, "_compiled_call_impl", None) is not None:
            reasons.append("the model was torch.compile'd and its compiled graph skipped the guard's "
                           "wrappers (enter the guard before compiling, or call the eager model)")
        if not self._seen:
            reasons.append("the model was not called while the guard was active")
        else:
            reasons.append("a fused fast path (an eval-mode TransformerEncoder under no_grad) skipped "
                           "the submodules")
        return reasons

    def _make_hook(self, path: str, module: Any, parent: tuple[str, str]):
        tensor_type = self._torch.Tensor
        compute_dtype = self._compute_dtype
        float32 = self._torch.float32
        # Under an autocast policy, float32 out of a module autocast does not lower is
        # what autocast produces whenever a float32 tensor went in: decided inline too.
        float32_passes = self.policy.autocast and not autocast.is_lowered(type(module).__name__)
        seen = self._seen.add
        check = self._check_activation
        pending = self._pending
        resolve = self._resolve

        def hook(module, args, kwargs, output):
            __tracebackhide__ = True
            seen(path)
            if pending and path in pending:
                resolve(module, path, args, kwargs)
            # The common cases, a tensor or a flat tuple of them (Hugging Face layers
            # return tuples) in the compute dtype, are decided inline; so is float32 that
            # autocast produced from a float32 direct input.
            if isinstance(output, tensor_type):
                if output.dtype is compute_dtype:
                    return
                items: Any = (output,)
            elif type(output) is tuple:
                items = output
            else:
                items = None
            if items is not None:
                carried = False
                for item in items:
                    if isinstance(item, tensor_type):
                        dtype = item.dtype
                        if dtype is compute_dtype or not dtype.is_floating_point:
                            continue
                        if dtype is float32 and float32_passes:
                            carried = True
                            continue
                        break
                    if isinstance(item, (tuple, list, dict)):
                        break
                else:
                    if not carried:
                        return
                    # Fine unless every floating input is narrower (a widening): decided
                    # here when the direct inputs show it, else by the full check.
                    undecided = False
                    for arg in (*args, *kwargs.values()):
                        if isinstance(arg, tensor_type):
                            if arg.dtype is float32:
                                return
                            undecided = undecided or arg.dtype.is_floating_point
                        elif isinstance(arg, (tuple, list, dict)):
                            undecided = True
                    if not undecided:
                        return
            check(module, path, parent, args, kwargs, output)

        return hook

    def _root_pre_hook(self, module, args) -> None:
        __tracebackhide__ = True
        self.unfinished_calls += 1  # first: the checks below may raise
        self.entry_ids = {id(t) for t, _ in _floating(args, self._torch.Tensor)}
        params_dtype = self._params_dtype
        for path, owner in self._with_params:
            for param in owner._parameters.values():
                if param is not None and param.dtype is not params_dtype and param.dtype.is_floating_point:
                    self._check_params(owner, path)
                    break

    def _make_root_hook(self, path: str):
        seen = self._seen
        check = self._check_root_output

        def hook(module, args, kwargs, output):
            __tracebackhide__ = True
            seen.add(path)
            self.unfinished_calls -= 1
            self.entry_ids = set()
            if self._pending:
                self.resolve_pending(path, _floating((args, kwargs), self._torch.Tensor), module)
                self.flush_pending()
            check(path, args, kwargs, output)

        return hook

    def _resolve(self, module, path: str, args, kwargs) -> None:
        __tracebackhide__ = True
        self.resolve_pending(path, _floating((args, kwargs), self._torch.Tensor), module)

    def _check_params(self, module, path: str) -> None:
        __tracebackhide__ = True
        wrong: dict[str, list[str]] = {}
        for name, param in module._parameters.items():
            if param is None or not param.dtype.is_floating_point or param.dtype is self._params_dtype:
                continue
            wrong.setdefault(_name(param.dtype), []).append(name)
        for actual, names in wrong.items():
            self.report("DTL391", path, param_message(names, actual, self.policy.params), module)

    def _check_activation(self, module, path: str, parent: tuple[str, str], args, kwargs, output) -> None:
        __tracebackhide__ = True
        tensor_type = self._torch.Tensor
        compute_dtype = self._compute_dtype
        # Tuples and dicts of tensors in the compute dtype are the next most common case.
        tensors = [t for _, t in _tensors(output, tensor_type) if t.dtype.is_floating_point]
        if all(t.dtype is compute_dtype for t in tensors):
            return
        # Under an autocast policy, compute and float32 outputs of a module autocast does
        # not lower are fine as soon as one direct input is float32: no deeper walk.
        float32 = self._torch.float32
        if self.policy.autocast and not autocast.is_lowered(type(module).__name__) \
                and all(t.dtype is compute_dtype or t.dtype is float32 for t in tensors):
            for arg in (*args, *kwargs.values()):
                if isinstance(arg, tensor_type) and arg.dtype is float32:
                    return
        outputs = [(t, _name(t.dtype)) for t in tensors]
        device_type = tensors[0].device.type
        self.check_activation(
            module, path, outputs, _floating((args, kwargs), tensor_type),
            lambda: {_name(p.dtype) for p in module.parameters() if p.dtype.is_floating_point},
            parent, device_type,
        )

    def _check_root_output(self, path: str, args, kwargs, output) -> None:
        __tracebackhide__ = True
        tensor_type = self._torch.Tensor
        outputs = [(field, _name(t.dtype)) for field, t in _tensors(output, tensor_type)
                   if t.dtype.is_floating_point]
        if not outputs:
            return
        inputs = {name for _, name in _floating((args, kwargs), tensor_type)}
        self.report_output(path, outputs, inputs, _name(self._torch.get_default_dtype()))
