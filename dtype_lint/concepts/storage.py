"""Parameter storage and the other roles a dtype plays that never set a computation's
dtype (``POLICY.md`` F1: ``param_dtype``, parameter and running-stat initialisers, masks,
int-to-float helpers, quantised formats).

A ``dtype`` parameter or field is benign by meaning when

* the function has an initializer's signature (``(key, shape, dtype=...)``), or is an
  array creator other than a constructor (a ``shape`` parameter right before the dtype:
  ``init(shape, dtype)``, ``get_state(name, shape, dtype, init)``); a class whose
  ``shape`` field comes right before the dtype field describes an array, as
  ``jax.ShapeDtypeStruct`` does;
* the function builds a mask (its name says ``mask``): the dtype is the mask's;
* the function is quantised code (:mod:`dtype_lint.concepts.quantised`);
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
  carries the default that matters; or every call's result is cast back (an island).

None of these holds for a parameter whose dtype makes a buffer the forward path writes
into (:mod:`dtype_lint.concepts.buffers`): a decoding cache holds the activations.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable, Iterator

from dtype_lint.concepts.definitions import (_PARAM_CALLS, Definitions, Key, _at_init, _body_of, _Class, _Function, _is_self,
                                             _param_names, _positional_param, passes_argument)
from dtype_lint.concepts.islands import _island, _root_name
from dtype_lint.core.shapes import last_name, walk
from dtype_lint.frameworks.casts import CAST_METHOD_NAMES as _CAST_METHODS, CREATORS as _CREATORS

# Calls whose result has no floating dtype (booleans, integers).
_NOT_FLOAT_CALLS = frozenset({"one_hot", "logical_and", "logical_or", "logical_not", "logical_xor", "equal",
                              "not_equal", "greater", "greater_equal", "less", "less_equal", "isin", "isnan",
                              "isinf", "isfinite", "eq", "ne", "gt", "ge", "lt", "le", "argmax", "argmin",
                              "argsort", "bool"})
# Words in a value's name that say it holds integers or booleans (indices, masks).
NOT_FLOAT_WORDS = ("mask", "idx", "index", "indices", "ids", "bool", "onehot", "one_hot")
_KEY_WORDS = ("key", "rng", "seed")
# Verbs that start a builder's name (`make_causal_mask`).
_BUILDER_VERBS = ("make", "build", "create", "prepare", "get", "gen", "compute", "init")
# Names of the positions and coordinates a table is built from: integers or a grid, not
# activations, whatever dtype they are converted to.
_POSITION_WORDS = ("pos", "coord")
# Calls that make an array from the value they are given, in the dtype passed with it.
_CONVERTERS = frozenset({"asarray", "array", "as_tensor"})
# How many callers up a returned table is followed to where it is cast back.
_MAX_RETURN_DEPTH = 4


class DtypeRoles(Definitions):
    """Which dtype parameters and fields of the file are benign by meaning."""

    def benign_param(self, key: Key, name: str) -> bool:
        """Whether parameter ``name`` of the function ``key`` is benign by meaning (see the
        module docs): an initializer's, a storage dtype, an int-to-float helper's, unread,
        or an inner link of a dtype chain."""
        function = self.functions.get(key)
        return function is not None and name in function.params and (
            self._benign_meaning(key, name) or self._init_table(function, name)
            or self._callers_decide(function, name) or self.quantised(key) or _island(function.node, name))

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
        # Passed by keyword to a layer of this file with no constructor of its own (a Flax
        # module, a dataclass): that field's role decides (a field the layer never reads).
        held = call.func.id if isinstance(call.func, ast.Name) else None
        if keyword is not None and held in self.classes and keyword in self.compute_names and (
                self._method(self.classes[held], "__init__") is None):
            return self.benign_field(held, keyword)
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
