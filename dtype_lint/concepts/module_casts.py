"""Casts of a module (``POLICY.md`` F3): a whole module cast (``model.half()``,
``model.to(torch.bfloat16)``, a cast stored under a module's name), every parameter recast
in a loop (``p.data = p.data.half()``), a parameter replaced by a recast copy of itself,
and a module handed to a casting helper (a configured one, ``cast-helpers``, or a function
of this file or another that the project model finds casting the parameter it binds).
Not a recast: a cast to float32 (the default precision), to another value's dtype
(``.to(unet.dtype)``) or to a dtype the caller asked a loader for. Whether the module is
the trained one is :mod:`dtype_lint.concepts.trained`'s question."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dtype_lint.concepts.casting_helpers import casting_code, casting_helper
from dtype_lint.concepts.casts import cast_dtype_name, cast_target, names_dtype
from dtype_lint.concepts.module_cast_shapes import PARAMETER_LOOP, _data_in_loop, _helper_call, _module_cast
from dtype_lint.concepts.modules import modules
from dtype_lint.concepts import modules as module_concepts, test_code
from dtype_lint.concepts.test_code import in_test_code
from dtype_lint.concepts.trained import Cast, paths
from dtype_lint.core.calls import argument, method_name
from dtype_lint.core.deferred import cst
from dtype_lint.core.dtypes import LOW_PRECISION, dtype_name
from dtype_lint.core.model.summary import FunctionSummary
from dtype_lint.core.options import Options
from dtype_lint.core.flow.engine import Source
from dtype_lint.core.rule import Check, Finder, Hit, Site
from dtype_lint.core.shapes import Prefilter, cast_call, literals
from dtype_lint.core.traversal import descendants
from dtype_lint.core.words import matches_any, words_of
from dtype_lint.frameworks.casts import CAST_METHODS, TYPE_CAST_METHODS

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext

_PARAMETER = frozenset({"torch.nn.Parameter", "nn.Parameter", "Parameter", "torch.nn.parameter.Parameter"})
_CAST_METHOD_NAMES = CAST_METHODS | TYPE_CAST_METHODS
# A function named for the precision it casts to: `model2half`, `wrap_fp16_model`.
_PRECISION_NAME = re.compile(r"half|fp16|bf16|float16|bfloat16")
_MEMBERS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers"})


def _members_owner(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """What the loop runs over the parameters of: ``model`` in ``model.parameters()``,
    ``group`` in ``group["params"]``; else the iterable itself (a loop that sets each
    element's ``.data`` runs over parameters or buffers, whatever yields them)."""
    if (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)
            and iterable.func.attr.value in _MEMBERS):
        return iterable.func.value
    if isinstance(iterable, cst.Subscript):
        return iterable.value
    return iterable


def _root(node: cst.BaseExpression) -> str | None:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None




def _words(options: Options) -> dict | None:
    """What the finders of this module follow; None where a configured helper's glob has
    no literal piece (then files are parsed whole)."""
    helpers = literals(options.cast_helpers)
    if helpers is None:
        return None
    return dict(import_words=("convert", "cast", "to_fp16", "to_bf16", *("float", "half", "double", "bfloat16",
                                                                           "dtype")),
                configured=tuple(helpers),
                # Receivers, arguments and callees, never dtype spellings: `cast_call` reads the
                # text with aliases written out.
                sees_aliases=True)


class ModuleCasts(Finder):
    """A whole module's cast, a cast stored under a module's name, a parameter replaced by
    a recast copy."""

    file_facts = staticmethod(module_concepts.file_facts)

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        words = _words(options)
        return None if words is None else Prefilter(
            lambda t, lc, u: cast_call(t) and (u is None or _module_cast(u.index, u.names)), **words)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.value, cst.Call):
            return
        target, value = node.targets[0].target, node.value
        self._parameter_replaced(target, value)
        receiver = cast_target(value, self.ctx)
        if receiver is None:
            return
        found = modules(self.ctx, self.options)
        if found.reason(receiver) or found.tensor(receiver):
            return  # a known module's cast is reported by visit_Call; a tensor's is not one
        module = found.evidence(target)
        if module is not None and recasts(self.ctx, self.options, value):
            self.found(_site(value, module, receiver))

    def visit_Call(self, node: cst.Call) -> None:
        receiver = cast_target(node, self.ctx)
        if receiver is not None:
            module = modules(self.ctx, self.options).evidence(receiver)
            if module is None:
                return
            if recasts(self.ctx, self.options, node):
                self.found(_site(node, module, receiver))
            elif _casts_itself_to_another(node, receiver, self.ctx):
                # An adapter moved to its base layer's dtype (`self.to(dtype=weight.dtype)`)
                # is the trained model recast where the base is frozen in half precision.
                self.found(Site(node, {"why": module.kind}, context=Cast(receiver), confidence="low",
                                basis="a module cast to another value's dtype by itself (an adapter matching "
                                      "its base layer): whether the two train alike is not seen"))

    def _parameter_replaced(self, target: cst.BaseExpression, value: cst.Call) -> None:
        """``p = nn.Parameter(p.half())``: a trained parameter swapped for a recast copy."""
        if self.ctx.resolve(value.func) not in _PARAMETER or not value.args:
            return
        inner = value.args[0].value
        if not isinstance(inner, cst.Call) or not recasts(self.ctx, self.options, inner):
            return
        receiver = cast_target(inner, self.ctx)
        code = self.ctx.module.code_for_node
        if receiver is not None and code(receiver) == code(target):
            # Reported even inside casting helpers: the new Parameter is not the one the
            # optimizer holds, so it stops training as well as losing precision.
            self.found(Site(value, {"why": "a parameter replaced by a recast copy of itself"},
                            context=Cast(None, skip=None, judged=False)))


class ParameterLoops(Finder):
    """Every parameter (or buffer) of a module recast in a loop."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        words = _words(options)
        return None if words is None else Prefilter(
            lambda t, lc, u: cast_call(t) and (u is None or bool(PARAMETER_LOOP.search(t)) and _data_in_loop(u.index)),
            **words)

    def visit_For(self, node: cst.For) -> None:
        """``for p in model.parameters(): p.data = p.data.half()``: the module recast one
        parameter (or buffer) at a time, which is the whole module's cast by hand. Only
        parameters and buffers have their ``.data`` replaced, so any loop that does so to
        each element recasts them (``for p in group["params"]``, an ordering's
        ``generate()``)."""
        owner = _members_owner(node.iter)
        names = {n.value for n in descendants(node.target) if isinstance(n, cst.Name)}
        assigns = [s for s in descendants(node.body) if isinstance(s, cst.Assign) and len(s.targets) == 1]
        # Names the loop body binds, to their values.
        bound = {a.targets[0].target.value: a.value for a in assigns if isinstance(a.targets[0].target, cst.Name)}
        for stmt in assigns:
            target = stmt.targets[0].target
            if not (isinstance(target, cst.Attribute) and target.attr.value == "data"
                    and isinstance(target.value, cst.Name) and target.value.value in names):
                continue
            cast = self._cast_of(stmt.value, names, bound)
            # A dtype the caller asked for does not make a hand recast of each parameter
            # a configuration: the module's own dtype arguments are bypassed all the same.
            if cast is None or not recasts(self.ctx, self.options, cast, requested=False):
                continue
            upcast = cast_dtype_name(cast, self.ctx) == "float32"
            why = f"every parameter of `{self.ctx.module.code_for_node(owner)}` recast in a loop"
            guard = _requires_grad_guard(node, stmt)
            # Partial casts are judged by what they cast (POLICY.md F3): frozen parameters,
            # and trainable adapters cast back to float32, are benign; a loop that upcasts
            # (named modules kept in float32, as `_keep_in_fp32_modules` does, included)
            # or picks by requires_grad is likely one of those.
            saved = _saved_first(node, names)
            if upcast or guard == "frozen" or saved:
                basis = ("the loop casts parameters up to float32 (trainable adapters or frozen parameters cast back "
                         "are benign)" if upcast else "the loop casts only parameters that require no gradient"
                         if guard == "frozen" else "the loop keeps a copy of each parameter it casts, to restore")
                self.found(Site(cast, {"why": why}, context=Cast(owner, each=True), confidence="low", basis=basis))
            else:
                self.found(Site(cast, {"why": why}, context=Cast(owner, each=True)))
            return

    def _cast_of(self, value: cst.BaseExpression, names: set[str], bound: dict[str, cst.BaseExpression],
                 depth: int = 0) -> cst.Call | None:
        """The cast of a loop variable that ``value`` is: the cast itself, a name the loop
        bound to one, or a call of a function of this file (a nested helper such as
        ``half_fn(p)``) that returns a cast of its parameter."""
        if depth > 3:
            return None
        if isinstance(value, cst.Name) and value.value in bound:
            return self._cast_of(bound[value.value], names, bound, depth + 1)
        if not isinstance(value, cst.Call):
            return None
        receiver = cast_target(value, self.ctx)
        if receiver is not None:
            return value if _root(receiver) in names else None
        if isinstance(value.func, cst.Name) and value.func.value in self.ctx.functions and any(
                isinstance(a.value, cst.Name) and a.value.value in names for a in value.args):
            helper = self.ctx.functions[value.func.value]
            params = {p.name.value for p in helper.params.params}
            for node in descendants(helper.body):
                returned = node.value if isinstance(node, cst.Return) else None
                for branch in (returned.body, returned.orelse) if isinstance(returned, cst.IfExp) else (returned,):
                    if isinstance(branch, cst.Call) and (inner := cast_target(branch, self.ctx)) is not None \
                            and _root(inner) in params:
                        return branch
        return None


class CastingHelperCalls(Finder):
    """A module handed to a casting helper: a configured one, or a function that casts the
    parameter it binds (the project model's summaries)."""

    file_facts = staticmethod(module_concepts.file_facts)

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        words = _words(options)
        return None if words is None else Prefilter(
            lambda t, lc, u: any(helper in t for helper in words["configured"]) or (u is None or _helper_call(u)),
            **words)

    def visit_Call(self, node: cst.Call) -> None:
        if cast_target(node, self.ctx) is not None:
            return  # a cast itself (ModuleCasts')
        qualified = self.ctx.resolve(node.func)
        if qualified and matches_any(qualified.rsplit(".", 1)[-1], self.options.cast_helpers):
            if not self._storage_dtype(node):
                why = f"{qualified.rsplit('.', 1)[-1]}() casts it whole"
                # A helper known by its name (`cast-helpers`), not by what it does.
                self.found(Site(node, {"why": why}, context=Cast(argument(node, 0, None), skip="plain"),
                                confidence="medium", basis=f"{qualified.rsplit('.', 1)[-1]} is a casting helper by name"))
        elif qualified and self.ctx.view is not None:
            self._helper_casts(node, qualified)

    def _helper_casts(self, call: cst.Call, qualified: str) -> None:
        """A module handed to a function that casts it, in this file or another, itself
        or through the helpers it passes it on to (the project model's summaries). A
        helper of this file whose body is reported already (its parameter is known to be
        a module there) is not reported again at its callers."""
        if qualified.rsplit(".", 1)[-1][:1].isupper():
            return  # a class's constructor: not a casting helper the model follows
        view = self.ctx.view
        helper = view.local(self.ctx.source or "", qualified, self.ctx.file_tree())
        if helper is None or not isinstance(helper.node, FunctionSummary):
            return
        found = modules(self.ctx, self.options)
        for position, arg in enumerate(call.args):
            module = found.evidence(arg.value) if not arg.star else None
            if module is None or skip_reason(self.ctx, self.options, arg.value, False):
                continue
            path = view.cast_path(helper, arg.keyword.value if arg.keyword else position)
            if path is None or not self._helper_dtype_lowers(call, helper.node, path.dtype_param):
                continue
            # This file's own helper is reported in its body, unless it is named as a
            # casting helper (whose body is the casting API: its callers are reported).
            if path.caster.path == view.path and not casting_helper(path.caster.name):
                continue
            last = path.steps[-1]
            why = f"{qualified.rsplit('.', 1)[-1]}() casts it: {last.message} at {last.location()}"
            self.found(Site(call, {"why": why}, steps=path.steps, context=Cast(arg.value, skip=None),
                            confidence=module.confidence, basis=module.basis))
            return

    def _helper_dtype_lowers(self, call: cst.Call, helper: FunctionSummary, dtype_param: str) -> bool:
        """A helper's cast that takes its dtype from a parameter lowers precision only
        where the call passes a low-precision dtype there."""
        if not dtype_param:
            return True
        position = helper.params.index(dtype_param) if dtype_param in helper.params else None
        value = argument(call, position, dtype_param)
        return value is not None and dtype_name(value, self.ctx) in LOW_PRECISION

    def _storage_dtype(self, call: cst.Call) -> bool:
        """A helper applying a configured storage dtype (`cast_tree(mu, mu_dtype)`): the
        optimizer state or parameters are kept in the dtype the user chose for them."""
        return any(
            isinstance(arg.value, (cst.Name, cst.Attribute))
            and self.ctx.module.code_for_node(arg.value).rsplit(".", 1)[-1] in self.options.param_dtype_names
            for arg in call.args
        )


def _site(cast: cst.Call, module: Source, receiver: cst.BaseExpression) -> Site:
    """A cast of a module, as sure as the evidence that the receiver is one."""
    return Site(cast, {"why": module.kind}, context=Cast(receiver), confidence=module.confidence, basis=module.basis)


def _casts_itself_to_another(call: cst.Call, receiver: cst.BaseExpression, ctx: FileContext) -> bool:
    """``self.to(dtype=other.dtype)``: a module's own cast to a dtype read off another value."""
    if not (isinstance(receiver, cst.Name) and receiver.value == "self"):
        return False
    dtype = argument(call, None, "dtype") or argument(call, 1, None) or argument(call, 0, None)
    return isinstance(dtype, cst.Attribute) and dtype.attr.value == "dtype" and _root(dtype) != "self"


def _saved_first(loop: cst.For, names: set[str]) -> bool:
    """Whether the loop stores a copy of its variable (``saved[name] = p.data.clone()``):
    a cast made for a while, which the code means to undo."""
    for stmt in descendants(loop.body):
        if isinstance(stmt, cst.Assign) and isinstance(stmt.targets[0].target, cst.Subscript) and isinstance(
                stmt.value, cst.Call) and method_name(stmt.value) == "clone":
            node = stmt.value.func
            while isinstance(node, (cst.Attribute, cst.Call)):
                node = node.value if isinstance(node, cst.Attribute) else node.func
            if isinstance(node, cst.Name) and node.value in names:
                return True
    return False


def _requires_grad_guard(loop: cst.For, stmt: cst.CSTNode) -> str | None:
    """Whether the statement runs under a test of ``requires_grad`` in the loop:
    ``"frozen"`` (``if not p.requires_grad``), ``"trainable"`` (``if p.requires_grad``),
    or None."""
    for branch in descendants(loop.body):
        if isinstance(branch, cst.If) and stmt in set(descendants(branch.body)):
            test = branch.test
            negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            inner = test.expression if negated else test
            if any(isinstance(n, cst.Attribute) and n.attr.value == "requires_grad" for n in descendants(inner)):
                return "frozen" if negated else "trainable"
    return None


def skip_reason(ctx: FileContext, options: Options, receiver: cst.BaseExpression | None,
                by_name: bool = True) -> str | None:
    """Why a cast of ``receiver`` here is not reported: test code, a class whose job is
    casting, the definition of a cast method. A casting helper's body is the casting API
    only for the module it is handed: a cast of its own parameter is reported where the
    helper is called (through the project model's summaries), a cast of anything else
    (``self.module``, ``learn.model``) here. A function named for a precision
    (``model2half``, ``wrap_fp16_model``) that casts its parameter is such a helper too
    (``by_name``: not for the argument of a call, which is the caller's own cast through a
    helper)."""
    reason = "test code" if in_test_code(ctx) else casting_code(ctx)
    function = ctx.function
    if function is not None and ctx.method_class() is not None and function.name in _CAST_METHOD_NAMES:
        return "the definition of a cast method"  # `def half(self): return self.to(...)`
    own = _own_parameter(ctx, receiver)
    if reason == "the body of a casting helper":
        return reason if own else None
    if reason is None and own and by_name and (_PRECISION_NAME.search(function.name.lower())  # type: ignore[union-attr]
                                               or _only_casts(ctx, function.node)):  # type: ignore[union-attr]
        return "the body of a casting helper"
    return reason


def _only_casts(ctx: FileContext, function: cst.FunctionDef) -> bool:
    """A function that does nothing but cast what it is handed to the dtype its caller
    gives it (``def to_lp(m, dtype): return m.to(dtype)``): a casting helper by its shape,
    whatever its name. One that also converts or loads (``model = convert(model)`` before
    the cast), or picks the dtype itself, is a step of its own, reported there."""
    params = function.params
    if not any(words_of(p.name.value) & {"dtype", "precision"} for p in (*params.params, *params.kwonly_params)):
        return False
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    for index, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        for small in stmt.body:
            value = small.value if isinstance(small, (cst.Expr, cst.Return, cst.Assign)) else None
            if index == 0 and isinstance(small, cst.Expr) and isinstance(value, cst.SimpleString):
                continue  # the docstring
            if isinstance(small, cst.Return) and (value is None or isinstance(value, cst.Name)):
                continue
            if not (isinstance(value, cst.Call) and cast_target(value, ctx) is not None):
                return False
    return True


def _own_parameter(ctx: FileContext, receiver: cst.BaseExpression | None) -> bool:
        """Whether ``receiver`` is what the function was handed: one of its parameters,
        or the variable of a loop over one (``for m in models``)."""
        function = ctx.function
        if not isinstance(receiver, cst.Name) or function is None or receiver.value in ("self", "cls"):
            return False
        params = function.node.params
        own = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)} - {"self", "cls"}
        if receiver.value in own:
            return True
        return any(isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) and loop.target.value == receiver.value
                   and isinstance(loop.iter, cst.Name) and loop.iter.value in own for loop in descendants(function.node))


def recasts(ctx: FileContext, options: Options, call: cst.Call, requested: bool = True) -> bool:
        """Not a cast to float32, which restores the default precision, nor one to another
        model's or tensor's dtype (`.to(unet.dtype)`, `dtype=old.weight.dtype`), which
        keeps what is there, nor (``requested``) to a dtype the caller asked a loader for.
        A parameter-by-parameter loop (not ``requested``) is a hand recast to float32 too:
        it changes the precision the model was loaded in, one tensor at a time."""
        if requested and cast_dtype_name(call, ctx) == "float32":
            return False
        dtype = argument(call, 0, "dtype")
        if method_name(call) == "to" and (dtype is None or not names_dtype(dtype, ctx)):
            dtype = argument(call, 1, None) or argument(call, None, "dtype")
        found = paths(ctx, options)
        return not (found.matches_existing_dtype(dtype) or (requested and found.requested_dtype(dtype)))


def _skipped(ctx: FileContext, options: Options, hit: Hit) -> bool:
    cast = hit.site.context
    if cast.skip == "own":
        return skip_reason(ctx, options, cast.receiver) is not None
    return cast.skip == "plain" and (in_test_code(ctx) or casting_code(ctx) is not None)


SKIPPED = Check("test code, or code whose job is casting (a casting helper's own parameter, a precision plugin, "
                "a cast method's definition)", _skipped, test_code.file_facts)
