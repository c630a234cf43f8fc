"""What a layer is, in any framework, and its forward path: where the activations go.

**Layers** are recognised by structure, not by a framework's name:

* a class deriving from a layer base: a torch/Lightning/Flax module, or a base whose
  last name ends with ``Module``, ``Layer``, ``Block``, ``Model`` or ``Cell`` (Haiku,
  Keras, Equinox, Objax, Trax and in-house bases), other than data modules;
* a class whose forward (``forward``, ``forward_*``, ``__call__``, Keras' ``call``)
  computes with parameters (``self.param``, ``get_parameter``, ``add_weight``,
  ``self.weights``...) or calls other layers (an attribute built from a framework layer
  or a layer of this file, or a layer built and called inline);
* a subclass of a class so recognised in the same file.

**The forward path** is the forward methods of the layers, the functions and methods of
this file they call (transitively), and the functions called by lambdas a layer stores
on itself (``self.up = lambda x: upsample(x)``, run when forward calls ``self.up``).
A call whose result the caller casts back (``helper(x).to(x.dtype)``, or a name it is
assigned to and cast later) does not put its callee on the path
(:mod:`dtype_lint.concepts.islands`).
"""

from __future__ import annotations

import ast
from typing import Iterator

from dtype_lint.concepts.definitions import _PARAM_CALLS, Definitions, Key, _Class, _Function, _is_self, _matches
from dtype_lint.core.shapes import dotted, last_name, walk

FORWARD_PREFIX = "forward"
FORWARD_NAMES = frozenset({"__call__", "call"})
_LAYER_BASE_SUFFIXES = ("Module", "Layer", "Block", "Model", "Cell")
# Qualified-name prefixes of the frameworks' layers (their capitalised names).
_LAYER_PACKAGES = ("torch.nn.", "flax.linen.", "flax.nnx.", "haiku.", "keras.", "tensorflow.keras.", "tf.keras.",
                   "equinox.", "objax.nn.", "trax.layers.", "nn.", "hk.", "eqx.")
# Attributes of self that hold a layer's parameters (Trax, Keras, torch).
_PARAM_ATTRS = frozenset({"weights", "weight", "kernel", "params", "trainable_weights"})


class Layers(Definitions):
    """The file's layers and forward path."""

    def imports_any(self, packages: frozenset[str]) -> bool:
        """Whether the file imports (anywhere) from one of the top-level ``packages``."""
        return any(q.split(".", 1)[0] in packages for q in self.aliases.values())

    def is_layer(self, cls: str | None) -> bool:
        return cls is not None and cls in self.layers

    def is_sublayer(self, cls: str | None, name: str) -> bool:
        """Whether ``self.<name>`` holds a layer: some method of the class (or its in-file
        family) stores a framework layer or a layer of this file there."""
        if not cls or cls not in self.classes:
            return False
        return any(attr == name and isinstance(value, ast.Call) and self._layer_constructor(value.func)
                   for member in self._family(cls) if member in self.classes
                   for method in self.classes[member].methods.values()
                   for attr, value in self._stores(method))

    def stored_constructors(self, cls: str | None, name: str, layers_only: bool = True) -> list[str]:
        """The constructors (dotted, as the file writes them) of what some method of the
        class (or its in-file family) stores in ``self.<name>``: the layers only, or any
        class (one of another file, which the layer facts cannot tell a layer)."""
        if not cls or cls not in self.classes:
            return []
        return [written for member in self._family(cls) if member in self.classes
                for method in self.classes[member].methods.values()
                for attr, value in self._stores(method)
                if attr == name and isinstance(value, ast.Call)
                and (not layers_only or self._layer_constructor(value.func))
                and (written := dotted(value.func))]

    def has_method(self, cls: str | None, name: str) -> bool:
        """Whether ``self.<name>`` is a method of the class (or an in-file base), not a
        stored sub-layer."""
        info = self.classes.get(cls) if cls else None
        return info is not None and self._method(info, name) is not None

    def returns_model(self, key: Key) -> bool:
        """Whether the function hands back a model of this file it builds (``return
        ResNet(...)``, or a name bound to one): a model factory, the user's entry point.
        Not a helper that builds a framework's layer (``return nn.Embed(...)``): that is
        a building block the file's own models call."""
        function = self.functions.get(key)
        if function is None:
            return False

        def model(call: ast.AST) -> bool:
            return isinstance(call, ast.Call) and (self.resolve(call.func) or "").rsplit(".", 1)[-1] in self.layers

        built = {t.id for node in self._nodes(function) if isinstance(node, ast.Assign) and model(node.value)
                 for t in node.targets if isinstance(t, ast.Name)}
        returns = [node.value for node in self._nodes(function) if isinstance(node, ast.Return) and node.value]
        return bool(returns) and all(model(value) or (isinstance(value, ast.Name) and value.id in built)
                                     for value in returns)

    def on_forward_path(self, key: Key) -> bool:
        """A layer's forward, or a function of this file that one calls (not cast back)."""
        return key in self.forward_path

    def _find_layers(self) -> None:
        for cls in self.classes.values():
            if any(_layer_base(b) or self._layer_constructor_name(b) for b in cls.bases) or \
                    self._computes_with_parameters(cls):
                self.layers.add(cls.name)
        changed = True
        while changed:  # subclasses, and classes calling layers of this file
            changed = False
            for cls in self.classes.values():
                if cls.name in self.layers:
                    continue
                if any(b.rsplit(".", 1)[-1] in self.layers for b in cls.bases) or self._calls_layers(cls):
                    self.layers.add(cls.name)
                    changed = True

    def forwards(self, cls: _Class) -> Iterator[_Function]:
        return (method for name, method in cls.methods.items() if forward_name(name))

    def _computes_with_parameters(self, cls: _Class) -> bool:
        for method in self.forwards(cls):
            for node in walk(method.node):
                if isinstance(node, ast.Call):
                    name = last_name(node.func)
                    if name in _PARAM_CALLS:
                        return True
                    inner = node.func
                    if isinstance(inner, ast.Call) and self._layer_constructor(inner.func):
                        return True  # nn.Dense(4)(x)
                elif (isinstance(node, ast.Attribute) and node.attr in _PARAM_ATTRS and _is_self(node.value)):
                    return True
        return self._calls_layers(cls)

    def _calls_layers(self, cls: _Class) -> bool:
        """A forward calls ``self.<attr>(...)`` where ``self.<attr>`` is built from a layer."""
        built = {attr for method in cls.methods.values() for attr, value in self._stores(method)
                 if isinstance(value, ast.Call) and self._layer_constructor(value.func)}
        if not built:
            return False
        return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_self(node.func.value)
                   and node.func.attr in built for method in self.forwards(cls) for node in walk(method.node))

    def _layer_constructor(self, func: ast.AST) -> bool:
        return self._layer_constructor_name(self.resolve(func))

    def layer_constructor_name(self, qualified: str | None) -> bool:
        """Whether a qualified name constructs a layer: a framework's layer class or a
        layer class of this file."""
        return self._layer_constructor_name(qualified)

    def _layer_constructor_name(self, qualified: str | None) -> bool:
        if not qualified:
            return False
        last = qualified.rsplit(".", 1)[-1]
        if last in self.layers:
            return True
        return last[:1].isupper() and qualified.startswith(_LAYER_PACKAGES) and not last.startswith("Parameter")

    def _find_forward_path(self) -> None:
        todo: list[_Function] = []
        for name in self.layers:
            cls = self.classes[name]
            if _matches(cls.name, self.excluded) or any(_matches(b.rsplit(".", 1)[-1], self.excluded)
                                                        for b in cls.bases):
                continue
            todo.extend(self.forwards(cls))
            # Lambdas a layer stores on itself run when its forward calls them.
            for method in cls.methods.values():
                for _, value in self._stores(method):
                    if isinstance(value, ast.Lambda):
                        todo.extend(self._callees(value.body, method))
        seen: set[Key] = set()
        while todo:
            function = todo.pop()
            if function.key in seen:
                continue
            seen.add(function.key)
            todo.extend(self._callees(function.node, function))
        self.forward_path = seen
        self.helper_names = frozenset(key[1][-1] for key in seen)

    def _callees(self, root: ast.AST, caller: _Function) -> Iterator[_Function]:
        """Functions of this file called in ``root`` whose result is not cast back."""
        casts = self._cast_names(caller)
        # Whether a call is cast back is decided within its statement, so inside ``root``.
        parents: dict[int, ast.AST] = {}
        for node in walk(root, parents):
            if not isinstance(node, ast.Call) or self._cast_back_at(node, casts, parents):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in self.top_functions:
                yield self.top_functions[func.id]
            elif isinstance(func, ast.Attribute) and _is_self(func.value):
                cls = self._class_of(caller)
                method = self._method(cls, func.attr) if cls else None
                if method is not None:
                    yield method


def forward_name(name: str) -> bool:
    """Whether a method of that name is a layer's forward (``forward*``, ``__call__``, ``call``)."""
    return name.startswith(FORWARD_PREFIX) or name in FORWARD_NAMES


def _layer_base(qualified: str) -> bool:
    last = qualified.rsplit(".", 1)[-1]
    return last.endswith(_LAYER_BASE_SUFFIXES) and "Data" not in last
