"""State a layer keeps beside its parameters, and whether its dtype is the activations':
a buffer the forward path writes activations into (a decoding cache: its dtype is a
computation dtype), a plain attribute the forward mixes into the activations (module
casts and dtype policies do not reach it), and modules a model keeps in float32 by name
(``_keep_in_fp32_modules``: their float32 is deliberate)."""

from __future__ import annotations

import ast

from dtype_lint.concepts.definitions import (_DEVICE_MOVES, Definitions, _device_only, _Function, _is_self,
                                             _reads_name)
from dtype_lint.core.shapes import last_name, walk
from dtype_lint.frameworks.bases import KEEP_FLOAT32_ATTRIBUTES
from dtype_lint.frameworks.casts import CAST_METHODS, TYPE_CAST_METHODS

_ARITHMETIC_OPS = frozenset({"Add", "Sub", "Mult", "Div", "MatMult", "FloorDiv", "Pow"})
# In-place writes into a tensor (torch) or a variable's value (`v.value = ...`).
_IN_PLACE_WRITES = frozenset({"copy_", "index_copy_", "index_put_", "scatter_", "masked_scatter_"})


class Buffers(Definitions):
    """The file's buffers and plain attributes, as the forward path uses them."""

    def kept_float32(self, cls: str | None) -> bool:
        """Whether a model of the file keeps the class in float32 by the name it stores
        it under (``_keep_in_fp32_modules = ["time_embed"]`` with ``self.time_embed =
        TimeEmbedding(...)``), or the class is held inside such a module: its weights
        stay float32 whatever the model's dtype, so float32 in its forward matches them."""
        if self._kept is None:
            self._kept = self._kept_classes()
        return cls in self._kept

    def _kept_classes(self) -> frozenset[str]:
        names = {name for c in self.classes.values() for stmt in c.node.body
                 for name in _kept_float32_names(stmt)}
        if not names:
            return frozenset()
        kept = {written.rsplit(".", 1)[-1] for cls in self.classes for name in names
                for written in self.stored_constructors(cls, name, layers_only=False)}
        pending = list(kept)
        while pending:
            owner = self.classes.get(pending.pop())
            for method in owner.methods.values() if owner else ():
                for _, value in self._stores(method):
                    held = last_name(value.func) if isinstance(value, ast.Call) else None
                    if held and held in self.classes and held not in kept:
                        kept.add(held)
                        pending.append(held)
        return frozenset(kept)

    def _fills_written_buffer(self, function: _Function, name: str) -> bool:
        """Whether the dtype ``name`` makes a buffer of the method's class (stored on
        ``self`` or registered) that the class's forward path writes into: a cache the
        activations are written into (a KV cache) holds them in that dtype, so it is a
        computation dtype, not storage, whatever the method is named."""
        cls = self._class_of(function)
        if cls is None:
            return False
        made = {attr for attr, value in self._stores(function) if _reads_name(value, name)}
        made |= {registered for call in self._calls_in(function) if last_name(call.func) == "register_buffer"
                 and (registered := _registered_name(call)) and len(call.args) > 1 and _reads_name(call.args[1], name)}
        if not made:
            return False
        family = self._family(cls.name)
        return any(key[0] in family and any(_writes_into(node, made) for node in self._nodes(self.functions[key]))
                   for key in self.forward_path if key in self.functions)

    def mixed_in_forward(self, cls_name: str, attr: str) -> bool:
        """Whether a layer keeps ``self.<attr>`` as a plain attribute (not a parameter or
        buffer, which a module's ``.half()``/``.to(dtype)`` cast) that its forward path
        puts into arithmetic as it is, or only moved to a device (``self.mean.to(
        x.device)``, a name bound to that), with no method of the class (or its in-file
        family) casting it to another dtype."""
        if cls_name not in self.layers:
            return False
        mixed = False
        for name in self._family(cls_name):
            for method in self.classes[name].methods.values():
                held = {attr}  # names holding the attribute in this method ("self." for itself)
                for node in walk(method.node):
                    if isinstance(node, ast.Call) and (_registers(node, attr) or _casts_attribute(node, attr)):
                        return False
                    if isinstance(node, ast.Assign) and _holds_attribute(node.value, attr):
                        held.update(t.id for t in node.targets if isinstance(t, ast.Name))
                if method.key in self.forward_path and not mixed:
                    mixed = any(isinstance(node, ast.BinOp) and type(node.op).__name__ in _ARITHMETIC_OPS and any(
                        _holds_attribute(operand, attr) or (isinstance(operand, ast.Name) and operand.id in held)
                        for operand in (node.left, node.right)) for node in walk(method.node))
        return mixed


def _holds_attribute(node: ast.AST, attr: str) -> bool:
    """``self.<attr>``, as it is or moved to a device (``.to(x.device)``, ``.to(device)``,
    ``.cuda()``): still the dtype it was made with."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DEVICE_MOVES:
        if not _device_only(node):
            return False
        node = node.func.value
    return isinstance(node, ast.Attribute) and node.attr == attr and _is_self(node.value)


def _casts_attribute(call: ast.Call, attr: str) -> bool:
    """A cast of ``self.<attr>`` to some dtype (``.to(x.dtype)``, ``.type_as(x)``,
    ``.half()``...): a method that casts it decides its dtype."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and func.value.attr == attr
            and _is_self(func.value.value)):
        return False
    if func.attr in _DEVICE_MOVES:
        return not _device_only(call)
    return func.attr in TYPE_CAST_METHODS or func.attr in CAST_METHODS or func.attr == "type_as"


def _registers(call: ast.Call, attr: str) -> bool:
    """``self.register_buffer("<attr>", ...)`` or a parameter of that name: not a plain attribute."""
    return _registered_name(call) == attr


def _registered_name(call: ast.Call) -> str | None:
    """The name ``register_buffer("<name>", ...)`` or ``register_parameter`` gives."""
    if last_name(call.func) in ("register_buffer", "register_parameter") and call.args and isinstance(
            call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def _self_attribute(node: ast.AST) -> str | None:
    """``self.<attr>`` under any subscripts and a variable's ``.value``: the attribute."""
    node = _unwrapped(node)
    return node.attr if isinstance(node, ast.Attribute) and _is_self(node.value) else None


def _writes_into(node: ast.AST, attrs: set[str]) -> bool:
    """A write into one of the buffers ``self.<attr>``: an item or a variable's value
    assigned (``self.k[:, pos] = k``, ``self.k.value = k``), an in-place copy, or the
    attribute reassigned from itself (``self.k = update_slice(self.k, k, i)``)."""
    # (Not an augmented assignment, `self.total += v`, nor `index_add_`: what accumulates
    # there is a statistic, a float32 buffer by design, not the activations themselves.)
    if isinstance(node, ast.Assign):
        for target in node.targets:
            attr = _self_attribute(target)
            if attr in attrs and (target is not _unwrapped(target) or any(
                    _self_attribute(n) == attr for n in walk(node.value) if isinstance(n, ast.Attribute))):
                return True
        return False
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
        node.func.attr in _IN_PLACE_WRITES and _self_attribute(node.func.value) in attrs)


def _unwrapped(node: ast.AST) -> ast.AST:
    """The ``self.<attr>`` under subscripts and ``.value`` (see _self_attribute)."""
    while isinstance(node, ast.Subscript) or (isinstance(node, ast.Attribute) and node.attr == "value"):
        node = node.value
    return node


def _kept_float32_names(stmt: ast.stmt) -> list[str]:
    """The attribute names a class-body ``_keep_in_fp32_modules = [...]`` (Hugging
    Face's and diffusers' per-model float32 policy) lists."""
    if isinstance(stmt, ast.Assign):
        targets, value = stmt.targets, stmt.value
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets, value = [stmt.target], stmt.value
    else:
        return []
    if not any(isinstance(t, ast.Name) and t.id in KEEP_FLOAT32_ATTRIBUTES for t in targets):
        return []
    elements = value.elts if isinstance(value, (ast.List, ast.Tuple, ast.Set)) else []
    return [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
