"""What a layer is, in any framework, and what role a dtype plays around it (F1).

Computed once per file from CPython's ``ast`` of the *whole* source text (never the
prefilter's reduction of it, so the findings do not depend on what the prefilter
keeps), and cached by text: the prefilter's shapes and the LibCST rules ask the same
:class:`LayerFacts`.

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
assigned to and cast later) does not put its callee on the path.

**Quantised code** is a function that works with low-bit storage (``uint8``/``int8``/
``int4``/``float8_*``/``float4_*`` dtypes, or calls that quantise or dequantise), a
method of a class that stores low-bit parameters or buffers, or one whose name or whose
class's name says it quantises: its float32 is the format's (scales, biases and lookup tables
the low-bit kernels take in float32, values dequantised for them), not a compute dtype
a policy could set.

**Dtype roles** (for the float32-default rule): a ``dtype`` parameter or field is benign by meaning when

* the function has an initializer's signature (``(key, shape, dtype=...)``), or is an
  array creator other than a constructor (a ``shape`` parameter right before the dtype:
  ``init(shape, dtype)``, ``get_state(name, shape, dtype, init)``); a class whose
  ``shape`` field comes right before the dtype field describes an array, as
  ``jax.ShapeDtypeStruct`` does;
* the function builds a mask (its name says ``mask``, as value names do below): the
  dtype is the mask's, and a mask only selects;
* the function is quantised code (above);
* every use of it is the dtype of parameter or state creation (``self.param``,
  ``self.variable``, ``hk.get_parameter``, ``hk.get_state``, ``add_weight``, an
  initializer such as ``kernel_init(key, shape, dtype)``): the ``param_dtype`` role;
* every use of it turns integers or booleans into floats (a comparison, a logical op, a
  one-hot, a mask or index value cast to it): it cannot upcast an activation;
* it is passed on only to such uses, directly, through an attribute of ``self``, or
  through another function of the file;
* it is never read;
* (a function parameter) every call of the function in this file passes it from the
  caller's own parameter, or happens at init time (``__init__``/``setup``, or a
  ``register_buffer``): the function is an inner link of a dtype chain whose entry
  carries the default that matters.

None of these holds for a parameter whose dtype makes a buffer of the method's class
(stored on ``self`` or registered) that the class's forward path writes into (an item
or a variable's value assigned, an in-place copy, the attribute rebuilt from itself): a
decoding cache holds the activations in that dtype.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import fnmatch
import re
from typing import Iterable, Iterator

from dtype_lint.core.guards import parse_quietly
from dtype_lint.core.shapes import device_like, dotted, last_name, walk
from dtype_lint.frameworks.bases import KEEP_FLOAT32_ATTRIBUTES, LOSS_CLASSES
from dtype_lint.frameworks.casts import CAST_METHODS, TYPE_CAST_METHODS

Key = tuple  # (innermost enclosing class name or None, (function names, outermost first))

FORWARD_PREFIX = "forward"
FORWARD_NAMES = frozenset({"__call__", "call"})
_LAYER_BASE_SUFFIXES = ("Module", "Layer", "Block", "Model", "Cell")
# Qualified-name prefixes of the frameworks' layers (their capitalised names).
_LAYER_PACKAGES = ("torch.nn.", "flax.linen.", "flax.nnx.", "haiku.", "keras.", "tensorflow.keras.", "tf.keras.",
                   "equinox.", "objax.nn.", "trax.layers.", "nn.", "hk.", "eqx.")
# Calls that create parameters or state: a dtype passed to them is a storage dtype.
_PARAM_CALLS = frozenset({"param", "variable", "get_parameter", "get_state", "add_weight", "add_variable",
                          "create_parameter", "Parameter", "register_parameter", "register_buffer"})
# Attributes of self that hold a layer's parameters (Trax, Keras, torch).
_PARAM_ATTRS = frozenset({"weights", "weight", "kernel", "params", "trainable_weights"})
# Calls whose result has no floating dtype (booleans, integers).
_NOT_FLOAT_CALLS = frozenset({"one_hot", "logical_and", "logical_or", "logical_not", "logical_xor", "equal",
                              "not_equal", "greater", "greater_equal", "less", "less_equal", "isin", "isnan",
                              "isinf", "isfinite", "eq", "ne", "gt", "ge", "lt", "le", "argmax", "argmin",
                              "argsort", "bool"})
# Words in a value's name that say it holds integers or booleans (indices, masks).
NOT_FLOAT_WORDS = ("mask", "idx", "index", "indices", "ids", "bool", "onehot", "one_hot")
_CAST_METHODS = frozenset({"to", "astype", "type", "type_as"})
_LOW_DTYPES = frozenset({"float16", "half", "bfloat16"})
_INIT_METHODS = frozenset({"__init__", "setup", "build", "init_weights", "init_weights_and_state", "reset_parameters",
                           "_init_weights", "__post_init__"})

_KEY_WORDS = ("key", "rng", "seed")
# How many callers up a returned table is followed to where it is cast back.
_MAX_RETURN_DEPTH = 4
# Verbs that start a builder's name (`make_causal_mask`).
_BUILDER_VERBS = ("make", "build", "create", "prepare", "get", "gen", "compute", "init")
# Low-bit storage dtypes and the calls that quantise: code using them is quantised code.
_QUANTISED_DTYPES = frozenset({"uint8", "int8", "int4", "uint4", "qint8", "quint8", "quint4x2"})
_QUANTISED_PREFIXES = ("float8", "float4")
_QUANTISE_WORDS = ("quantiz", "quantis")
# Array constructors: a dtype given to them is the new array's.
_CREATORS = frozenset({"array", "asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "tensor",
                       "as_tensor", "normal", "uniform", "randn", "rand", "zeros_like", "ones_like", "full_like",
                       "empty_like", "convert_element_type"})


@dataclasses.dataclass
class _Function:
    key: Key
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: str | None  # the class it is a method of (directly), if any
    params: list[str]


@dataclasses.dataclass
class _Class:
    name: str
    node: ast.ClassDef
    bases: list[str]  # qualified, as far as imports tell
    methods: dict[str, _Function]


class LayerFacts:
    """The layers of one file, its forward path, and the benign dtype parameters and fields."""

    def __init__(self, tree: ast.Module | None, compute_names: frozenset[str], excluded: tuple[str, ...]) -> None:
        self.compute_names = compute_names
        self.excluded = excluded  # class-name globs whose forwards are not a layer's (losses, entry points)
        self.aliases: dict[str, str] = {}
        self.classes: dict[str, _Class] = {}
        self.functions: dict[Key, _Function] = {}
        self.top_functions: dict[str, _Function] = {}
        self.layers: set[str] = set()
        self.forward_path: set[Key] = set()
        self.helper_names: frozenset[str] = frozenset()
        self._tree = tree
        self._parent_map: dict[int, ast.AST] | None = None
        self._benign_params: dict[tuple[Key, str], bool] = {}
        self._benign_fields: dict[tuple[str, str], bool] = {}
        self._quantised: dict[Key, bool] = {}
        self._casts_back: dict[tuple[str | None, str], bool] = {}  # callee -> it casts back
        self._self_stores: dict[Key, list[tuple[str, ast.AST]]] = {}
        self._casts: dict[Key, set[str]] = {}
        self._kept: frozenset[str] | None = None  # see kept_float32
        self._returns_cast_back: dict[Key, bool] = {}
        self._returns: dict[Key, set[str]] = {}  # see _returned
        self._edges: dict[Key, list[_Edge]] = {}  # see _flow_edges
        self._own_calls: dict[Key, list[ast.Call]] = {}  # see _calls_in
        self._walked: dict[Key, list[ast.AST]] = {}  # see _nodes
        self._following: set[Key] = set()  # functions whose calls are being followed
        if tree is None:
            return
        self._collect(tree)
        self._find_layers()
        self._find_forward_path()

    # -- queries ---------------------------------------------------------------------

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

    def callee_casts_back(self, cls: str | None, name: str) -> bool:
        """Whether ``self.<name>`` (a method of ``cls``, when given) or the module-level
        function ``name`` casts back to a dtype that follows its inputs."""
        memo = self._casts_back.get((cls, name))
        if memo is None:
            if cls:
                info = self.classes.get(cls)
                target = self._method(info, name) if info is not None else None
            else:
                target = self.top_functions.get(name)
            memo = self._casts_back[(cls, name)] = target is not None and any(
                isinstance(n, ast.Call) and casts_back_call(n) for n in walk(target.node))
        return memo

    def on_forward_path(self, key: Key) -> bool:
        """A layer's forward, or a function of this file that one calls (not cast back)."""
        return key in self.forward_path

    def benign_param(self, key: Key, name: str) -> bool:
        """Whether parameter ``name`` of the function ``key`` is benign by meaning (see the
        module docs): an initializer's, a storage dtype, an int-to-float helper's, unread,
        or an inner link of a dtype chain."""
        function = self.functions.get(key)
        return function is not None and name in function.params and (
            self._benign_meaning(key, name) or self._init_table(function, name)
            or self._callers_decide(function, name) or self.quantised(key) or _island(function.node, name))

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

    def quantised(self, key: Key) -> bool:
        """Whether the function ``key`` is quantised code: its name, or its class's, says
        it quantises; its body uses a low-bit dtype or calls something that quantises; or
        its class stores low-bit parameters or buffers (packed weights)."""
        memo = self._quantised.get(key)
        if memo is None:
            function = self.functions.get(key)
            owner = self.classes.get(key[0]) if key[0] else None
            memo = any(_quantise_word(n) for n in (*key[1], owner.name if owner else "")) or (
                function is not None and any(_quantised_node(n) for n in self._nodes(function))) or (
                owner is not None and any(_quantised_node(n, calls=False) for method in owner.methods.values()
                                          for value in _stored_values(method.node, self._stores(method))
                                          for n in walk(value)))
            self._quantised[key] = memo
        return memo

    def _benign_meaning(self, key: Key, name: str) -> bool:
        """An initializer's dtype, or one whose every use is benign (passing it on to a
        parameter that is itself benign by meaning)."""
        memo = (key, name)
        if memo not in self._benign_params:
            self._benign_params[memo] = True  # a cycle through itself adds no hazard
            function = self.functions.get(key)
            self._benign_params[memo] = function is not None and name in function.params and (
                _initializer_signature(function, name) or _mask_builder(function)
                or _initializer_factory(function, name) or self._benign_uses(function, name)
            ) and not self._fills_written_buffer(function, name)
        return self._benign_params[memo]

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

    def benign_field(self, cls: str, name: str) -> bool:
        """Whether the field (or ``self.<name>``) of class ``cls`` is benign by meaning:
        never read by the class, its in-file bases or subclasses, or read only in the
        roles above."""
        memo = (cls, name)
        if memo not in self._benign_fields and cls in self.classes and _describes_array(self.classes[cls].node, name):
            self._benign_fields[memo] = True
        if memo not in self._benign_fields:
            self._benign_fields[memo] = True
            reads = list(self._attribute_reads(cls, name)) if cls in self.classes else None
            # Unread counts only where the class computes in view (it has a forward): a
            # configuration class's fields are read by others.
            self._benign_fields[memo] = reads is not None and (bool(reads) or any(
                any(True for _ in self.forwards(self.classes[member])) for member in self._family(cls)
                if member in self.classes)) and all(self._benign_use(function, use) for function, use in reads)
        return self._benign_fields[memo]

    # -- collection ------------------------------------------------------------------

    @property
    def _parents(self) -> dict[int, ast.AST]:
        """Each node's parent by id, for the whole file, found on first use: the forward
        path finds the parents it needs in its own walks."""
        if self._parent_map is None:
            self._parent_map = {}
            if self._tree is not None:
                walk(self._tree, self._parent_map)
        return self._parent_map

    def _collect(self, tree: ast.Module) -> None:
        # Imports are statements: a walk of the statements alone finds them all. The first
        # import of a name in the file wins (within one statement, the last).
        for node in _statements(tree.body):
            found: dict[str, str] = {}
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            for local, qualified in found.items():
                self.aliases.setdefault(local, qualified)

        def visit(body: Iterable[ast.AST], cls: _Class | None, functions: tuple[str, ...]) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef):
                    info = _Class(node.name, node, [q for q in (self.resolve(b) for b in node.bases) if q], {})
                    self.classes.setdefault(node.name, info)
                    visit(node.body, info, functions)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = (cls.name if cls else None, functions + (node.name,))
                    args = node.args
                    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                    function = _Function(key, node, cls.name if cls and not functions else None, params)
                    self.functions.setdefault(key, function)
                    if cls is None and not functions:
                        self.top_functions.setdefault(node.name, function)
                    if cls is not None and not functions:
                        cls.methods.setdefault(node.name, function)
                    visit(node.body, cls, functions + (node.name,))
                else:
                    for field in ("body", "orelse", "finalbody", "handlers"):
                        inner = getattr(node, field, None)
                        if isinstance(inner, list):
                            visit(inner, cls, functions)
                    for case in getattr(node, "cases", ()):
                        visit(case.body, cls, functions)

        visit(tree.body, None, ())

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted name with its head import written out."""
        name = dotted(node)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        return self.aliases.get(head, head) + dot + rest

    # -- layers ----------------------------------------------------------------------

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

    # -- forward path ----------------------------------------------------------------

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

    def _passed_to_casting(self, function: _Function) -> dict[str, tuple[int, int]]:
        """Names the function passes (as they are or moved to a device) to a function of
        this file that casts back (a statistic handed to the helper that normalises and
        casts the output), or to a sub-layer whose class's forward casts back; each with
        where it is last passed."""
        cls = self._class_of(function)
        return _last_reads(arg for node in self._nodes(function) if isinstance(node, ast.Call)
                           and self._casting_callee(node, cls.name if cls else None)
                           for arg in map(_unmoved, (*node.args, *(k.value for k in node.keywords)))
                           if isinstance(arg, ast.Name))

    def _cast_names(self, function: _Function) -> set[str]:
        """Names whose values the function casts back, itself or through a helper of the
        file that casts back, and the names whose values flow into those before they are
        (``out = F.linear(codes, w)`` before ``out.to(w.dtype)``, ``codes.append(c)``),
        found once."""
        found = self._casts.get(function.key)
        if found is None:
            seeds = _cast_receivers(self._nodes(function))
            for name, at in self._passed_to_casting(function).items():
                seeds[name] = max(at, seeds.get(name, at))
            found = self._casts[function.key] = _flowing_into(self._flow(function), seeds) if seeds else set()
        return found

    def _nodes(self, function: _Function) -> list[ast.AST]:
        """Every node of the function (shapes.walk), found once: most facts read them."""
        found = self._walked.get(function.key)
        if found is None:
            found = self._walked[function.key] = walk(function.node)
        return found

    def _flow(self, function: _Function) -> list[_Edge]:
        """The function's assignments and container adds (see _flow_edges), found once."""
        found = self._edges.get(function.key)
        if found is None:
            found = self._edges[function.key] = _flow_edges(function.node)
        return found

    def _stores(self, function: _Function) -> list[tuple[str, ast.AST]]:
        """The function's ``self.<attribute> = value`` stores, found once."""
        found = self._self_stores.get(function.key)
        if found is None:
            found = self._self_stores[function.key] = list(_self_stores(function.node))
        return found

    def _class_of(self, function: _Function) -> _Class | None:
        name = function.key[0]
        return self.classes.get(name) if name else None

    def _method(self, cls: _Class, name: str, depth: int = 0) -> _Function | None:
        if name in cls.methods:
            return cls.methods[name]
        if depth > 8:
            return None
        for base in cls.bases:
            parent = self.classes.get(base.rsplit(".", 1)[-1])
            if parent is not None and parent is not cls:
                found = self._method(parent, name, depth + 1)
                if found is not None:
                    return found
        return None

    def _cast_back_at(self, call: ast.Call, casts: set[str], parents: dict[int, ast.AST] | None = None,
                      caller: _Function | None = None, depth: int = 0) -> bool:
        """The call's value is cast back: ``f(x).to(x.dtype)``, or a name it is assigned to
        is cast to a dtype that is not float32 later in the caller. ``parents``: those of
        the nodes around the call, when not the whole file's. With the ``caller``, a value
        the caller returns is cast back where every call of the caller is (see
        _results_cast_back)."""
        if parents is None:
            parents = self._parents
        child: ast.AST = call
        parent = parents.get(id(call))
        # Through method calls on the result (`f(x).flip(-1).unsqueeze(2)`) to a cast or a
        # name; with the caller, through arithmetic too (`(f(x) * s).to(x.dtype)`).
        while isinstance(parent, ast.Attribute) or (caller is not None and isinstance(parent, (ast.BinOp, ast.UnaryOp))):
            if not isinstance(parent, ast.Attribute):
                child, parent = parent, parents.get(id(parent))
                continue
            grand = parents.get(id(parent))
            if not (isinstance(grand, ast.Call) and grand.func is parent):
                break
            if parent.attr in _CAST_METHODS and _casts_to_follower(grand):
                return True
            child, parent = grand, parents.get(id(grand))
        # A branch of a conditional expression (or an operand of `or`) is the value too.
        while isinstance(parent, (ast.IfExp, ast.BoolOp)) and not (isinstance(parent, ast.IfExp) and parent.test is child):
            child, parent = parent, parents.get(id(parent))
        if isinstance(parent, ast.Tuple) and isinstance(parents.get(id(parent)), ast.Return):
            parent = parents.get(id(parent))  # one of the values returned together
        elif isinstance(parent, ast.Tuple) and isinstance(parents.get(id(parent)), ast.Assign):
            # `d, m = f(a), f(b)`: the value goes to the target in the same place.
            assign = parents.get(id(parent))
            index = next(i for i, element in enumerate(parent.elts) if element is child)
            targets = [t.elts[index] for t in assign.targets  # type: ignore[attr-defined]
                       if isinstance(t, ast.Tuple) and len(t.elts) == len(parent.elts)]
            names = {n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)}
            return bool(names & casts)
        if isinstance(parent, ast.Return):
            return caller is not None and self._results_cast_back(caller, depth + 1)
        if isinstance(parent, ast.Assign):
            names = {n.id for t in parent.targets for n in walk(t) if isinstance(n, ast.Name)} - {"_"}

            def settled(name: str) -> bool:
                return name in casts or (caller is not None and name in self._returned(caller)
                                         and self._results_cast_back(caller, depth + 1))
            # Unpacked (`rays, emb = f(x)`), the value may be in any target: each must be cast back.
            unpacked = any(isinstance(t, (ast.Tuple, ast.List)) for t in parent.targets)
            return bool(names) and (all if unpacked else any)(map(settled, names))
        if isinstance(parent, (ast.Call, ast.keyword)):
            # Passed straight to a function of this file that casts its result back, or
            # copied into a tensor or stored as module state (see _cast_receivers).
            outer = parent if isinstance(parent, ast.Call) else parents.get(id(parent))
            return isinstance(outer, ast.Call) and (self._casting_callee(outer) or (
                caller is not None and last_name(outer.func) in _STORED_AS_STATE))
        return False

    def _returned(self, function: _Function) -> set[str]:
        """The names whose values flow into what the function returns, found once."""
        found = self._returns.get(function.key)
        if found is None:
            found = self._returns[function.key] = _flowing_into(self._flow(function), _last_reads(
                node.value for node in _own_nodes(function.node) if isinstance(node, ast.Return) and node.value))
        return found

    def results_cast_back(self, key: Key) -> bool:
        """Whether the function ``key`` is private to its file or class (``_name``) and
        every call of it in the file has its value cast back (see _results_cast_back):
        a float32 value it returns is an island its callers close."""
        function = self.functions.get(key)
        return (function is not None and len(key[1]) == 1 and key[1][0].startswith("_")
                and not key[1][0].startswith("__") and self._results_cast_back(function))

    def _results_cast_back(self, function: _Function, depth: int = 0) -> bool:
        """Whether every call of the function in this file (one at least) has its value
        cast back where it is used, directly or returned by a caller whose own calls all
        are: a table handed up to the code that applies it and casts back."""
        if depth > _MAX_RETURN_DEPTH or function.key in self._following:
            return False  # too far up, or a recursion: nothing decided
        memo = self._returns_cast_back.get(function.key)
        if memo is None:
            self._following.add(function.key)
            calls = list(self._calls_of(function))
            memo = bool(calls) and all(
                self._cast_back_at(call, self._cast_names(caller), caller=caller, depth=depth)
                for caller, call in calls)
            self._following.discard(function.key)
            if depth == 0:  # an answer cut short deeper down holds only there
                self._returns_cast_back[function.key] = memo
        return memo

    def _calls_of(self, function: _Function) -> Iterator[tuple[_Function, ast.Call]]:
        """Each call of a module-level function (by its name) or of a method (through
        ``self``, in its class's in-file family), with the function it is written in."""
        if len(function.key[1]) != 1:
            return  # a nested function is called through its own scope only
        name = function.key[1][0]
        family = self._family(function.cls) if function.cls is not None else set()
        for caller in self.functions.values():
            if function.cls is not None and (caller.key[0] not in family or not self._resolves_to(
                    caller.key[0], name, function)):
                continue
            for node in self._calls_in(caller):
                if ((function.cls is not None and isinstance(node.func, ast.Attribute)
                     and node.func.attr == name and _is_self(node.func.value))
                        or (function.cls is None and isinstance(node.func, ast.Name) and node.func.id == name)):
                    yield caller, node

    def _calls_in(self, function: _Function) -> list[ast.Call]:
        """The calls of the function's own body (not of functions defined in it), found once."""
        found = self._own_calls.get(function.key)
        if found is None:
            found = self._own_calls[function.key] = [n for n in _own_nodes(function.node) if isinstance(n, ast.Call)]
        return found

    def _resolves_to(self, cls: str | None, name: str, function: _Function) -> bool:
        """Whether ``self.<name>`` in a method of ``cls`` may be ``function``: a sibling
        class that defines its own ``name`` calls that one."""
        info = self.classes.get(cls) if cls else None
        found = self._method(info, name) if info is not None else None
        return found is None or found is function

    def _casting_callee(self, call: ast.Call, cls: str | None = None) -> bool:
        """A function or method of this file that casts back, or, with the caller's
        class, a sub-layer it stores from a class of this file whose forward does."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.callee_casts_back(None, func.id)
        if isinstance(func, ast.Attribute) and _is_self(func.value):
            owner = next((cls.name for cls in self.classes.values() if func.attr in cls.methods), None)
            if owner is not None:
                return self.callee_casts_back(owner, func.attr)
            held = [c for c in self.stored_constructors(cls, func.attr, layers_only=False)
                    if c in self.classes] if cls else []
            return bool(held) and all(self.callee_casts_back(c, "forward") or self.callee_casts_back(c, "__call__")
                                      for c in held)
        return False

    # -- dtype roles -----------------------------------------------------------------

    def _benign_uses(self, function: _Function, name: str) -> bool:
        uses = [n for n in self._nodes(function) if isinstance(n, ast.Name) and n.id == name
                and isinstance(n.ctx, ast.Load)]
        # An unread parameter says nothing of its meaning (a stub, an API's placeholder).
        return bool(uses) and all(self._benign_use(function, use) for use in uses)

    def _benign_use(self, function: _Function, use: ast.AST, depth: int = 0) -> bool:
        """One read of a dtype: storage, int-to-float, or passed on to such a use."""
        parent = self._parents.get(id(use))
        if isinstance(parent, ast.keyword):
            keyword: str | None = parent.arg
            call = self._parents.get(id(parent))
        else:
            keyword, call = None, parent
        if isinstance(parent, ast.Assign) and use is parent.value:
            # self.attr = dtype: the attribute's reads decide.
            targets = [t for t in parent.targets if isinstance(t, ast.Attribute) and _is_self(t.value)]
            cls = self._class_of(function)
            return bool(targets) and cls is not None and len(targets) == len(parent.targets) and all(
                self.benign_field(cls.name, t.attr) for t in targets)
        if not isinstance(call, ast.Call) or use is call.func:
            return False
        callee = last_name(call.func)
        if callee is None:
            return False
        if callee in _PARAM_CALLS or ("init" in callee.lower() and callee != "__init__") or _names_parameters(callee):
            return True  # a parameter, state or initializer's dtype (`_convert_to_coloparam(p, dtype)`)
        if callee in _CREATORS and self._in_storage(call):
            return True  # nn.Parameter(torch.zeros(n, dtype=dtype)), a buffer's value
        if self._int_to_float(call, use):
            return True
        # Passed on to a function of this file: that parameter's role decides.
        target = self._target_function(call, function)
        if target is not None:
            param = keyword if keyword is not None else _positional_param(target, call, use)
            if param is not None and param in self.compute_names:
                return self._benign_meaning(target.key, param)
        return False

    def _int_to_float(self, call: ast.Call, use: ast.AST) -> bool:
        """``X.astype(dtype)``, ``array(X, dtype)``, ``one_hot(..., dtype=dtype)`` with X a
        boolean or integer value."""
        callee = last_name(call.func)
        if callee == "one_hot":
            return True
        source: ast.AST | None = None
        if callee in _CAST_METHODS and isinstance(call.func, ast.Attribute):
            source = call.func.value
        elif callee in ("array", "asarray", "tensor", "as_tensor", "convert_element_type") and call.args:
            source = call.args[0] if call.args[0] is not use else None
        return source is not None and self._not_float(source, call, 0)

    def _not_float(self, value: ast.AST, at: ast.AST, depth: int) -> bool:
        if depth > 4:
            return False
        if isinstance(value, ast.Compare) or (isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)):
            return True
        if isinstance(value, ast.Call):
            callee = last_name(value.func)
            if callee in _NOT_FLOAT_CALLS:
                return True
            # A helper of this file whose parameters are compared (a pairwise function
            # given a comparison by default): follow the names only.
            return any(self._not_float(a, at, depth + 1) for a in value.args[:1]) if callee in (
                "expand_dims", "reshape", "broadcast_to", "squeeze", "transpose", "tril", "triu") else False
        if isinstance(value, ast.Subscript):
            return self._not_float(value.value, at, depth + 1)
        if isinstance(value, ast.Name):
            if any(word in value.id.lower() for word in NOT_FLOAT_WORDS):
                return True
            return False
        return False

    def _target_function(self, call: ast.Call, caller: _Function) -> _Function | None:
        func = call.func
        if isinstance(func, ast.Name):
            if func.id in self.top_functions:
                return self.top_functions[func.id]
            if func.id in self.classes:
                return self.classes[func.id].methods.get("__init__")
        if isinstance(func, ast.Attribute) and _is_self(func.value):
            cls = self._class_of(caller)
            return self._method(cls, func.attr) if cls else None
        return None

    def _attribute_reads(self, cls_name: str, attr: str) -> Iterator[tuple[_Function, ast.AST]]:
        """Every ``self.<attr>`` load in the methods of the class, its in-file bases and
        its in-file subclasses."""
        family = self._family(cls_name)
        for function in self.functions.values():
            if function.key[0] not in family:
                continue
            for node in self._nodes(function):
                if (isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, ast.Load)
                        and _is_self(node.value)):
                    yield function, node
                elif isinstance(node, ast.Call) and last_name(node.func) in ("getattr", "vars", "asdict", "replace",
                                                                           "__dict__"):
                    yield function, node  # read by name or wholesale: not benign

    def overridden_field(self, cls_name: str, attr: str) -> bool:
        """Whether a class-level default is never the value read, because every instance
        gets ``self.<attr>`` from a constructor: the class's ``__init__`` (its own or an
        in-file base's) assigns it or hands it to ``super().__init__`` by name, or the
        class has none and every in-file subclass's does (an abstract base whose field
        only documents the attribute)."""
        if cls_name not in self.classes:
            return False

        def sets(cls: _Class) -> bool | None:
            init = self._method(cls, "__init__")
            if init is None:
                return None
            return any(attr == stored for stored, _ in self._stores(init)) or any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
                and any(k.arg == attr for k in n.keywords) or isinstance(n, ast.Call) and isinstance(
                    n.func, ast.Attribute) and n.func.attr == "__init__" and any(
                    isinstance(a, ast.Name) and a.id == attr for a in n.args)
                for n in walk(init.node))

        cls = self.classes[cls_name]
        own = sets(cls)
        if own is not None:
            return own
        subclasses = [c for c in self.classes.values() if c is not cls
                      and any(b.rsplit(".", 1)[-1] == cls_name for b in c.bases)]
        return bool(subclasses) and all(sets(c) for c in subclasses)

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

    def _family(self, cls_name: str) -> set[str]:
        family = {cls_name}
        changed = True
        while changed:
            changed = False
            for cls in self.classes.values():
                if cls.name in family:
                    for base in cls.bases:
                        last = base.rsplit(".", 1)[-1]
                        if last in self.classes and last not in family:
                            family.add(last)
                            changed = True
                elif any(b.rsplit(".", 1)[-1] in family for b in cls.bases):
                    family.add(cls.name)
                    changed = True
        return family

    def _callers_decide(self, function: _Function, name: str) -> bool:
        """A method whose every call in its class (``self.<method>(...)``) passes the dtype,
        casts the result back where it is applied, or runs at init time (an init method, a
        ``register_buffer``): its default is never what decides. So too a module-level
        function private to the file (``_name``), whose every call is in the file; a public
        one only where every call's value is cast back (others may call it with the
        default)."""
        method = function.key[1][0]
        if function.cls is None and not (len(function.key[1]) == 1 and method.startswith("_")):
            # A public builder whose results the file casts back; not one that converts
            # its inputs to the dtype: a caller elsewhere hands it bf16 tensors to upcast.
            return (len(function.key[1]) == 1 and not self._converts_inputs(function, name)
                    and self._results_cast_back(function))
        params = [p for p in function.params if p != "self"]
        position = params.index(name) if name in params else -1
        calls = 0
        for caller, node in self._calls_of(function):
            calls += 1
            # A table made at init or into a buffer follows the module's later casts.
            if not (passes_argument(node, name, position) or _at_init(caller.key[1][0]) or self._in_buffer(node)
                    or self._cast_back_at(node, self._cast_names(caller), caller=caller)):
                return False
        return calls > 0

    def _converts_inputs(self, function: _Function, name: str, depth: int = 0) -> bool:
        """Whether the function casts an existing value to its dtype parameter ``name``
        (``x.to(dtype=dtype)``, ``jnp.asarray(x, dtype)``, in it or in a function it
        defines) or hands ``name`` to a function of the file that does: it converts what
        it is given, rather than building a table from shapes."""
        inputs = {p for n in self._nodes(function) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                  for p in _param_names(n)} - {name, "self"}
        for node in self._nodes(function):
            if not isinstance(node, ast.Call):
                continue
            given = [*node.args, *(k.value for k in node.keywords)]
            if not any(isinstance(a, ast.Name) and a.id == name for a in given):
                continue
            callee = last_name(node.func)
            converted = (node.func.value if callee in _CAST_METHODS and isinstance(node.func, ast.Attribute)
                         else node.args[0] if callee in _CONVERTERS and node.args else None)
            root = _root_name(converted) if converted is not None else None
            if root in inputs and not self._not_float(converted, node, 0) and not any(
                    word in root.lower() for word in _POSITION_WORDS):
                return True  # a parameter's value (or one of a function defined here) cast
            target = self._target_function(node, function)
            if target is not None and target is not function and depth < _MAX_RETURN_DEPTH:
                use = next(a for a in given if isinstance(a, ast.Name) and a.id == name)
                keyword = next((k.arg for k in node.keywords if k.value is use), None)
                param = keyword if keyword is not None else _positional_param(target, node, use)
                if param is not None and self._converts_inputs(target, param, depth + 1):
                    return True
        return False

    def _init_table(self, function: _Function, name: str) -> bool:
        """A table builder used at init: some call of the function in this file runs at
        init time (``__init__``/``setup``, or a ``register_buffer``), and every other call
        passes ``name`` on from the caller's own parameter (the caller's default is the
        one that matters there)."""
        if function.cls is not None or len(function.key[1]) != 1:
            return False  # module-level functions only: methods are called through objects
        fname = function.key[1][0]
        calls = [(caller, node) for caller in self.functions.values() for node in walk(caller.node)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == fname
                 and caller is not function]
        if not calls:
            return False
        position = function.params.index(name)
        at_init = False
        for caller, call in calls:
            if _at_init(caller.key[1][0]) or self._in_buffer(call):
                at_init = True
                continue
            value = next((k.value for k in call.keywords if k.arg == name), None)
            if value is None and position < len(call.args) and not any(
                    isinstance(a, ast.Starred) for a in call.args[:position + 1]):
                value = call.args[position]
            if not (isinstance(value, ast.Name) and value.id in caller.params):
                return False
        return at_init

    def _in_buffer(self, call: ast.AST) -> bool:
        return self._in_storage(call, ("register_buffer", "Parameter"))

    def _in_storage(self, call: ast.AST, callees: Iterable[str] = _PARAM_CALLS) -> bool:
        """The value is (part of) an argument of a call that stores a parameter or buffer."""
        node = self._parents.get(id(call))
        while node is not None and not isinstance(node, ast.stmt):
            if isinstance(node, ast.Call) and last_name(node.func) in callees:
                return True
            node = self._parents.get(id(node))
        return False


# -- helpers -------------------------------------------------------------------------

_ARITHMETIC_OPS = frozenset({"Add", "Sub", "Mult", "Div", "MatMult", "FloorDiv", "Pow"})
_DEVICE_MOVES = frozenset({"to", "cuda", "cpu"})


def _holds_attribute(node: ast.AST, attr: str) -> bool:
    """``self.<attr>``, as it is or moved to a device (``.to(x.device)``, ``.to(device)``,
    ``.cuda()``): still the dtype it was made with."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DEVICE_MOVES:
        if not _device_only(node):
            return False
        node = node.func.value
    return isinstance(node, ast.Attribute) and node.attr == attr and _is_self(node.value)


def _device_only(call: ast.Call) -> bool:
    """A ``.to()``/``.cuda()``/``.cpu()`` whose arguments all name a device."""
    return all(device_like(a) for a in (*call.args, *(k.value for k in call.keywords if k.arg != "non_blocking")))


def _unmoved(node: ast.AST) -> ast.AST:
    """The value a chain of device moves (``v.to(x.device)``, ``v.cuda()``) starts from."""
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DEVICE_MOVES
           and _device_only(node)):
        node = node.func.value
    return node


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

def forward_name(name: str) -> bool:
    """Whether a method of that name is a layer's forward (``forward*``, ``__call__``, ``call``)."""
    return name.startswith(FORWARD_PREFIX) or name in FORWARD_NAMES


def _at_init(name: str) -> bool:
    """A method that runs at init time: a known one, or one named for (re)initialising
    (``_init_buffers``, ``reset_cache``)."""
    lower = name.lower()
    return name in _INIT_METHODS or lower.lstrip("_").startswith(("init", "reset"))


def _statements(nodes: Iterable[ast.AST]) -> Iterator[ast.stmt]:
    """Every statement among ``nodes`` and inside them (bodies, branches, handlers, match
    cases), in the file's order."""
    for node in nodes:
        if isinstance(node, ast.stmt):
            yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list and value and isinstance(value[0], (ast.stmt, ast.excepthandler, ast.match_case)):
                yield from _statements(value)


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _layer_base(qualified: str) -> bool:
    last = qualified.rsplit(".", 1)[-1]
    return last.endswith(_LAYER_BASE_SUFFIXES) and "Data" not in last


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _self_stores(function: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(attribute, value) of each ``self.<attribute> = value`` in the function."""
    for node in walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and _is_self(target.value):
                    yield target.attr, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            if isinstance(node.target, ast.Attribute) and _is_self(node.target.value):
                yield node.target.attr, node.value


def _stored_values(function: ast.AST, stores: list[tuple[str, ast.AST]]) -> Iterator[ast.AST]:
    """What the function stores on ``self``: assigned attributes (its ``stores``) and
    registered buffers or parameters."""
    yield from (value for _, value in stores)
    for node in walk(function):
        if isinstance(node, ast.Call) and last_name(node.func) in ("register_buffer", "register_parameter"):
            yield from node.args[1:]


def _reads_name(value: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in walk(value))


# In-place writes into a tensor (torch) or a variable's value (`v.value = ...`).
_IN_PLACE_WRITES = frozenset({"copy_", "index_copy_", "index_put_", "scatter_", "masked_scatter_"})


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


def _casts_to_follower(call: ast.Call) -> bool:
    """A cast whose dtype follows something (``x.dtype``, ``self.dtype``, ``type_as``) or
    is a low precision: not float32."""
    if last_name(call.func) == "type_as":
        return True
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "dtype")]
    for arg in args:
        text = ast.dump(arg)
        if "float32" in text or "'float'" in text or "single" in text:
            continue
        if "dtype" in text.lower() or "float16" in text or "half" in text:
            return True
    return False


def casts_back_call(call: ast.Call) -> bool:
    """``x.to(x.dtype)``, ``x.astype(dtype)``, ``jnp.asarray(y, dtype)``: a cast or a
    conversion to a dtype that follows something."""
    name = last_name(call.func)
    if name in _CAST_METHODS:
        return _casts_to_follower(call)
    if name in _CREATORS and (len(call.args) > 1 or call.keywords):
        return _casts_to_follower(ast.Call(call.func, call.args[1:], call.keywords))
    return False


def _cast_receivers(nodes: list[ast.AST]) -> dict[str, tuple[int, int]]:
    """Names a function (its ``nodes``) casts back somewhere, each with where it last is: in the
    receiver of a cast to a dtype that follows something (``v.to(x.dtype)``, ``(x +
    v).to(x.dtype)``, ``grid_sample(t, v).to(x.dtype)``), copied into a tensor
    (``buf.copy_(v)``) or stored as a buffer or parameter: what they hold ends in a value
    cast back."""
    def receivers() -> Iterator[ast.AST]:
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr in _CAST_METHODS and _casts_to_follower(node):
                yield node.func.value
            elif last_name(node.func) in _STORED_AS_STATE:
                # Copied into an existing tensor (which keeps its dtype), or made a buffer or
                # parameter, which the module's casts and policies then govern.
                yield from (*node.args, *(k.value for k in node.keywords))
    return _last_reads(receivers())


def _last_reads(exprs: Iterable[ast.AST]) -> dict[str, tuple[int, int]]:
    """Each name read in the expressions, with the position of its last read there."""
    out: dict[str, tuple[int, int]] = {}
    for expr in exprs:
        for n in walk(expr):
            if isinstance(n, ast.Name):
                at = (n.lineno, n.col_offset)
                if at > out.get(n.id, (0, 0)):
                    out[n.id] = at
    return out


_STORED_AS_STATE = frozenset({"copy_", "register_buffer", "Parameter"})


def _root_name(expr: ast.AST) -> str | None:
    """The name a chain of attributes, calls and subscripts starts from (``x`` in
    ``x[0].reshape(-1).to``)."""
    while isinstance(expr, (ast.Attribute, ast.Call, ast.Subscript)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr.id if isinstance(expr, ast.Name) else None


# Names of the positions and coordinates a table is built from: integers or a grid, not
# activations, whatever dtype they are converted to.
_POSITION_WORDS = ("pos", "coord")
# Calls that make an array from the value they are given, in the dtype passed with it.
_CONVERTERS = frozenset({"asarray", "array", "as_tensor"})
# Methods that put a value into the container they are called on.
_CONTAINER_ADDS = frozenset({"append", "extend", "insert"})


# Where a value is given to names: (position, the names given it, the names read into it).
_Edge = tuple[tuple[int, int], set[str], set[str]]


def _flow_edges(function: ast.AST) -> list[_Edge]:
    """The function's assignments (``out = F.linear(codes.float(), w)``) and container
    adds (``codes.append(c * s)``): the names each gives a value, and the names read
    into it."""
    edges: list[_Edge] = []
    for node in walk(function):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            edges.append(((node.lineno, node.col_offset),
                          {n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)},
                          {n.id for n in walk(node.value) if isinstance(n, ast.Name)}))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CONTAINER_ADDS
              and isinstance(node.func.value, ast.Name)):
            edges.append(((node.lineno, node.col_offset), {node.func.value.id},
                          {n.id for a in node.args for n in walk(a) if isinstance(n, ast.Name)}))
    return edges


def _flowing_into(edges: list[_Edge], seeds: dict[str, tuple[int, int]]) -> set[str]:
    """The seeds' names and every name whose value flows, through the edges, into one
    of them before the seed's last read there. A name assigned after that read (``h = h
    + table`` after ``norm(h)``) does not take the new value there."""
    last = dict(seeds)
    grew = True
    while grew:
        grew = False
        for at, targets, read in edges:
            if any(at < last.get(t, (0, 0)) for t in targets):
                for name in read:
                    if at > last.get(name, (0, 0)):
                        last[name] = at
                        grew = True
    return set(last)


def _initializer_factory(function: _Function, name: str) -> bool:
    """A function that makes parameters (``init_params``, ``init_weights``), or that
    returns an initializer and only hands the dtype to it as its default
    (``def init(key, shape, dtype=dtype)``): the dtype is the parameters' storage."""
    words = {w.lower() for w in re.findall(r"[A-Za-z][a-z]*", function.key[1][-1])}
    if "init" in words and words & {"params", "param", "parameters", "weights", "variables"}:
        return True
    # Inside a nested function that takes a parameter of the same name, the name is that
    # parameter (`def init(key, shape, dtype=dtype): ... dtype=dtype`), not this one.
    shadowed = {id(n) for inner in walk(function.node)
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                and inner is not function.node and name in _param_names(inner)
                for stmt in _body_of(inner) for n in walk(stmt)}
    uses = [n for n in walk(function.node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
            and id(n) not in shadowed]
    defaults = {id(d) for inner in walk(function.node) if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef))
                and inner is not function.node and len(inner.args.args) >= 2
                and any(w in inner.args.args[0].arg.lower() for w in _KEY_WORDS)
                and "shape" in inner.args.args[1].arg.lower()
                for d in (*inner.args.defaults, *inner.args.kw_defaults) if d is not None}
    return bool(uses) and all(id(use) in defaults for use in uses)


def _names_parameters(callee: str) -> bool:
    """A function named for making or converting parameters (``to_param``,
    ``convert_to_coloparam``, ``create_parameter``): a dtype handed to it is storage."""
    return any(w.endswith(("param", "parameter")) for w in re.findall(r"[a-z]+", callee.lower()))


def _param_names(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    a = function.args
    return {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None}


def _body_of(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.AST]:
    """What runs when the function is called (not its defaults and decorators)."""
    return [function.body] if isinstance(function, ast.Lambda) else list(function.body)


def _initializer_signature(function: _Function, name: str) -> bool:
    """``(key, shape, dtype=...)``: a JAX initializer, whose dtype is the parameter's; or
    an array creator, ``shape`` right before the dtype (``init(shape, dtype)``), or any
    ``*shape`` in a method named for initialising (``init_cache(input_shape, dtype)``),
    other than a constructor (a layer's ``__init__(..., shape, dtype)`` configures what
    it computes)."""
    params = [p for p in function.params if p != "self"]
    if len(params) >= 3 and any(w in params[0].lower() for w in _KEY_WORDS) and "shape" in params[1].lower():
        return True
    at = params.index(name) if name in params else -1
    before = params[at - 1] if at > 0 else ""
    method = function.key[1][-1]
    # `init_cache(input_shape, dtype)`: a method named for initialising makes state.
    return method != "__init__" and (before == "shape" or (before.endswith("shape") and _at_init(method)))


def _mask_builder(function: _Function) -> bool:
    """A function named as building a mask: a name ending in ``mask``/``masks``
    (``eager_mask``, ``combine_masks``) or a builder's verb with ``mask`` in it
    (``make_attention_mask``, ``_prepare_cross_attention_mask_4d``), not one that
    applies one (``masked_softmax``, ``apply_mask``): its dtype is the mask's."""
    name = function.key[1][-1].lower().lstrip("_")
    return "mask" in name and not name.startswith("apply") and (
        name.endswith(("mask", "masks")) or name.startswith(_BUILDER_VERBS))


def _describes_array(cls: ast.ClassDef, name: str) -> bool:
    """The class's ``shape`` field comes right before field ``name``: it describes an
    array (``jax.ShapeDtypeStruct``-like), whose dtype is not a computation's."""
    fields = [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    at = fields.index(name) if name in fields else -1
    return at > 0 and fields[at - 1] == "shape"


def _quantise_word(name: str) -> bool:
    lower = name.lower()
    return any(word in lower for word in _QUANTISE_WORDS)


def _quantised_node(node: ast.AST, calls: bool = True) -> bool:
    """A low-bit dtype (``torch.uint8``, ``jnp.int8``, ``"float8_e4m3fn"``) or, with
    ``calls``, a call that quantises or dequantises."""
    if isinstance(node, ast.Attribute):
        word = node.attr
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 24:
        word = node.value
    elif isinstance(node, ast.Call) and calls:
        callee = last_name(node.func)
        return callee is not None and _quantise_word(callee)
    else:
        return False
    return word in _QUANTISED_DTYPES or word.startswith(_QUANTISED_PREFIXES)


def passes_argument(call: ast.Call, name: str, position: int) -> bool:
    """Whether the call passes the parameter ``name``, by keyword or at ``position``
    (-1: keyword only), with no star argument before it to shift the positions."""
    return any(k.arg == name for k in call.keywords) or (
        0 <= position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args))


def _positional_param(target: _Function, call: ast.Call, use: ast.AST) -> str | None:
    params = [p for p in target.params if p != "self"] if target.cls else target.params
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if arg is use:
            return params[index] if index < len(params) else None
    return None


def _own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of a function's own body: not those of the functions, lambdas and
    classes defined inside it (their calls are theirs)."""
    out: list[ast.AST] = []
    stack = [*ast.iter_child_nodes(function)]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


# How many names, operands and calls deep a returned value is followed back to its cast.
_MAX_CARRY_DEPTH = 24


def _island(function: ast.AST, name: str) -> bool:
    """Whether every value the function returns is cast back to another value's dtype
    (``out.to(dtype=x.dtype)``, ``type_as``) or to a low precision, in a cast that does
    not mention the dtype parameter ``name``: what ``name`` sets is computed inside and
    leaves in the activations' dtype, a float32 island. A returned value may be the cast
    itself, or carry it: a name last assigned from it, a slice of it, a method of it
    (``out.clamp(-1, 1)``), a call given it first (``postprocess(out)``), arithmetic or a
    list whose every operand carries a cast back or is a number, or a value made in
    another value's dtype (``torch.tensor(s, dtype=x.dtype)``); arithmetic with any other
    value does not (it may promote). An input returned before any assignment to it
    (``if output_type == "latent": return latents``) is the caller's value, untouched."""
    nodes = _own_nodes(function)
    params = _param_names(function)  # type: ignore[arg-type]
    followed: dict[int, bool] = {}  # an assigned value (by id) -> it carries the cast
    assigned = [(node.lineno, node.targets[0].id, node.value) for node in sorted(
        (node for node in nodes if isinstance(node, ast.Assign) and len(node.targets) == 1
         and isinstance(node.targets[0], ast.Name)), key=lambda node: (node.lineno, node.col_offset))]

    def untouched(expr: ast.AST, line: int) -> bool:
        """An input returned before anything is assigned to it: the caller's value."""
        return isinstance(expr, ast.Name) and expr.id in params and expr.id != name and not any(
            target == expr.id and at < line for at, target, _ in assigned)

    def cast_back(expr: ast.AST) -> bool:
        if not isinstance(expr, ast.Call):
            return False
        keyword = [k.value for k in expr.keywords if k.arg == "dtype"]
        if last_name(expr.func) not in _CAST_METHODS and not keyword:
            return False  # neither a cast nor a value made in a given dtype
        given = (*expr.args, *keyword) if last_name(expr.func) in _CAST_METHODS else keyword
        dtype = [n for arg in given for n in walk(arg)]
        return not any(isinstance(n, ast.Name) and n.id == name for n in dtype) and (
            last_name(expr.func) == "type_as"
            or any((isinstance(n, ast.Attribute) and n.attr == "dtype") or last_name(n) in _LOW_DTYPES for n in dtype))

    def carried_back(expr: ast.AST, line: int, depth: int = 0) -> bool:
        while not cast_back(expr):
            if isinstance(expr, ast.Call) and any(isinstance(n, ast.Name) and n.id == name for arg in (
                    *expr.args, *(k.value for k in expr.keywords)) for n in walk(arg)):
                return False  # made in the dtype itself (`jnp.asarray(x, dtype)`)
            if isinstance(expr, ast.Subscript):
                expr = expr.value
            elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
                if expr.func.attr in _CAST_METHODS or expr.func.attr in ("float", "double"):
                    return False  # cast again, not back
                # A method of the value (`out.clamp(...)`) or of a helper given it first
                # (`self.processor.postprocess(out)`).
                return carried_back(expr.func.value, line, depth + 1) or bool(expr.args) and carried_back(
                    expr.args[0], line, depth + 1)
            elif isinstance(expr, ast.Call) and expr.args:
                expr = expr.args[0]
            elif isinstance(expr, (ast.BinOp, ast.List, ast.Tuple)) and depth < _MAX_CARRY_DEPTH:
                # arithmetic or a list of values that all carry the cast (or are numbers)
                parts = (expr.left, expr.right) if isinstance(expr, ast.BinOp) else expr.elts
                return all(isinstance(part, ast.Constant) or carried_back(part, line, depth + 1) for part in parts)
            elif isinstance(expr, ast.UnaryOp):
                expr = expr.operand
            elif isinstance(expr, ast.Name) and depth < _MAX_CARRY_DEPTH:
                earlier = [(at, value) for at, target, value in assigned if target == expr.id and at < line]
                if not earlier:
                    return depth == 0 and untouched(expr, line)
                at, value = earlier[-1]
                if id(value) not in followed:  # each assignment once: `x = x + x` chains stay linear
                    followed[id(value)] = carried_back(value, at, depth + 1)
                return followed[id(value)]
            else:
                return False
        return True

    returns = [node for node in nodes if isinstance(node, ast.Return) and node.value is not None]
    # Some returned value is computed, not a number, None or an input handed back as it came.
    computed = [node for node in returns if not isinstance(node.value, ast.Constant)
                and not untouched(node.value, node.lineno)]
    return bool(computed) and all(isinstance(node.value, ast.Constant) or carried_back(node.value, node.lineno)
                                  for node in returns)


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


# Facts of the last few texts: the prefilter's shape check and the rules ask for the same
# file's, and a text's facts do not change.
_MEMO: collections.OrderedDict[tuple, LayerFacts] = collections.OrderedDict()


def facts(text: str, options, tree: ast.Module | None = None) -> LayerFacts:
    """The layer facts of a whole source text, computed once per text and options;
    ``tree`` is the text's ``ast`` where the caller has it (else it is parsed here)."""
    compute = frozenset(options.compute_dtype_names) - frozenset(options.param_dtype_names)
    key = (text, compute, tuple(LOSS_CLASSES) + tuple(options.entry_point_classes))
    found = _MEMO.get(key)
    if found is None:
        if tree is None:
            tree = parse_quietly(text)
        found = _MEMO[key] = LayerFacts(tree, key[1], key[2])
        if len(_MEMO) > 2:
            _MEMO.popitem(last=False)
    return found


def key_of(ctx) -> Key:
    """The key of the function whose body a LibCST rule is in (see FileContext)."""
    from dtype_lint.core.deferred import cst

    names = tuple(scope.name for scope in ctx.scopes if isinstance(scope.node, cst.FunctionDef))
    cls = ctx.classes[-1].name if ctx.classes else None
    return (cls, names)
