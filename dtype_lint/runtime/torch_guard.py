"""The torch side of :func:`~dtype_lint.runtime.guard`: per-module forward hooks.

Hooks are registered on every submodule on enter and removed on exit, so that a
model that is not guarded runs torch's hook-free fast path and pays nothing. A hook
only compares ``tensor.dtype`` objects (no sync, no allocation) unless something is
off; the slower analysis that builds the message runs only then. Frames here set
``__tracebackhide__`` so that pytest shows a violation at the user's model code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dtype_lint.runtime.dtypes import dtype_name, torch_dtype
from dtype_lint.runtime.guard import ROOT_PATH, Guard, param_message


def _tensors(obj: Any, tensor_type: type, depth: int = 0) -> Iterator[Any]:
    if isinstance(obj, tensor_type):
        yield obj
    elif depth < 4:
        if isinstance(obj, (tuple, list)):
            for item in obj:
                yield from _tensors(item, tensor_type, depth + 1)
        elif isinstance(obj, dict):
            for item in obj.values():
                yield from _tensors(item, tensor_type, depth + 1)


def _floating_names(objs: Any, tensor_type: type) -> set[str]:
    return {dtype_name(t.dtype) for t in _tensors(objs, tensor_type) if t.dtype.is_floating_point}


class TorchGuard(Guard):
    """Checks DTL391, DTL191, DTL192 and DTL193 on a ``torch.nn.Module``."""

    def _install(self) -> None:
        import torch

        self._torch = torch
        self._params_dtype = torch_dtype(self.policy.params)
        self._compute_dtype = torch_dtype(self.policy.compute)
        self._handles = []
        try:
            for path, module in self.model.named_modules():
                path = path or ROOT_PATH
                # Parameters are checked before the call: a wrong dtype often makes
                # the forward itself fail, and the report should still be made.
                if module._parameters:
                    self._handles.append(module.register_forward_pre_hook(self._make_pre_hook(path)))
                hook = self._make_hook(path, module is self.model)
                self._handles.append(module.register_forward_hook(hook, with_kwargs=True))
        except BaseException:
            self._uninstall()
            raise

    def _uninstall(self) -> None:
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()

    def _make_pre_hook(self, path: str):
        params_dtype = self._params_dtype
        check_params = self._check_params

        def pre_hook(module, args):
            __tracebackhide__ = True
            for param in module._parameters.values():
                if param is not None and param.dtype is not params_dtype and param.dtype.is_floating_point:
                    check_params(module, path)
                    break

        return pre_hook

    def _make_hook(self, path: str, is_root: bool):
        tensor_type = self._torch.Tensor
        compute_dtype = self._compute_dtype
        check_output = self._check_root_output if is_root else self._check_activation

        def hook(module, args, kwargs, output):
            __tracebackhide__ = True
            # The common case is a single tensor in the compute dtype: decide it inline.
            if isinstance(output, tensor_type) and not is_root:
                dtype = output.dtype
                if dtype is compute_dtype or not dtype.is_floating_point:
                    return
            check_output(module, path, args, kwargs, output)

        return hook

    def _check_params(self, module, path: str) -> None:
        __tracebackhide__ = True
        wrong: dict[str, list[str]] = {}
        for name, param in module._parameters.items():
            if param is None or not param.dtype.is_floating_point or param.dtype is self._params_dtype:
                continue
            wrong.setdefault(dtype_name(param.dtype), []).append(name)
        for actual, names in wrong.items():
            self._recorder.report("DTL391", path, param_message(names, actual, self.policy.params))

    def _check_activation(self, module, path: str, args, kwargs, output) -> None:
        __tracebackhide__ = True
        tensor_type = self._torch.Tensor
        bad = sorted({dtype_name(t.dtype) for t in _tensors(output, tensor_type)
                      if t.dtype.is_floating_point and t.dtype is not self._compute_dtype})
        if not bad:
            return
        self._report_activation(
            module, path, bad, _floating_names((args, kwargs), tensor_type),
            lambda: {dtype_name(p.dtype) for p in module.parameters() if p.dtype.is_floating_point},
        )

    def _check_root_output(self, module, path: str, args, kwargs, output) -> None:
        __tracebackhide__ = True
        tensor_type = self._torch.Tensor
        outputs = _floating_names(output, tensor_type)
        if not outputs:
            return
        inputs = _floating_names((args, kwargs), tensor_type)
        self._report_output(path, outputs, inputs, dtype_name(self._torch.get_default_dtype()))
