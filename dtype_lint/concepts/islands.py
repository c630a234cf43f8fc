"""Float32 islands: values computed in float32 and cast back to a dtype that follows the
inputs before they meet the activations (``POLICY.md`` F1: an upcast that is cast back is
benign), and the calls whose results are cast back where they are used.

A call's value is cast back where it is cast to another value's dtype (``f(x).to(
x.dtype)``), or a name it flows into (through assignments, tuple unpacking, arithmetic,
container adds) is cast back later in the caller, or it is handed to a function or
sub-layer of the file that casts back, or returned by a caller whose own calls are all
cast back (a table handed up to the code that applies it).
"""

from __future__ import annotations

import ast
from typing import Iterable, Iterator

from dtype_lint.concepts.definitions import Definitions, Key, _Function, _is_self, _own_nodes, _param_names, _unmoved
from dtype_lint.core.shapes import last_name, walk
from dtype_lint.frameworks.casts import CAST_METHOD_NAMES as _CAST_METHODS, casts_back_call, casts_to_follower as _casts_to_follower

_LOW_DTYPES = frozenset({"float16", "half", "bfloat16"})
# How many callers up a returned table is followed to where it is cast back.
_MAX_RETURN_DEPTH = 4
_STORED_AS_STATE = frozenset({"copy_", "register_buffer", "Parameter"})
# Methods that put a value into the container they are called on.
_CONTAINER_ADDS = frozenset({"append", "extend", "insert"})
# How many names, operands and calls deep a returned value is followed back to its cast.
_MAX_CARRY_DEPTH = 24


class CastsBack(Definitions):
    """Which calls, names and functions of the file are cast back."""

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

    def _flow(self, function: _Function) -> list[_Edge]:
        """The function's assignments and container adds (see _flow_edges), found once."""
        found = self._edges.get(function.key)
        if found is None:
            found = self._edges[function.key] = _flow_edges(function.node)
        return found

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


def _root_name(expr: ast.AST) -> str | None:
    """The name a chain of attributes, calls and subscripts starts from (``x`` in
    ``x[0].reshape(-1).to``)."""
    while isinstance(expr, (ast.Attribute, ast.Call, ast.Subscript)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr.id if isinstance(expr, ast.Name) else None


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
