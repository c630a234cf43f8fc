"""Callables kept on objects that cross a process boundary (``POLICY.md`` F2.1): stored as
an attribute (``self.act = lambda x: x``, ``setattr``, ``model.forward = wrapper``), in a
container the object holds (``self.fns.append(f)``, ``self.table[k] = f``), as a hook
(``register_forward_hook`` on a model handed back or on ``self``), given to a constructor
that keeps it (a dataset's, a pipeline stage's, a module's whose ``__init__`` stores the
argument, ``super().__init__``), or as a lambda in a class body that a module's constructor
default keeps. Whoever stores it: the class, a factory, a trainer or a patch function.
Which owners cross is :mod:`dtype_lint.concepts.crossing`."""

from __future__ import annotations

import ast
import dataclasses
import re

from dtype_lint.concepts.crossing import Owner, constructed_class, names_class, owner
from dtype_lint.concepts.modules import modules
from dtype_lint.concepts.trained import paths, training_seen
from dtype_lint.concepts.module_shapes import may_be_module, pickled_type
from dtype_lint.concepts.unpicklable import PICKLING_IN_FILE
from dtype_lint.concepts.unpicklable_shapes import (BODY_WORDS, callable_arguments, callable_stores, callable_value,
                                                    generator_words, may_make_source, returns_local)
from dtype_lint.core.confidence import weakest
from dtype_lint.core.deferred import cst
from dtype_lint.core.finding import Step
from dtype_lint.core.flow.engine import FileFlow
from dtype_lint.core.flow.scopes import attribute_key
from dtype_lint.core.model.project import qualify, shown
from dtype_lint.core.model.summary import ClassSummary
from dtype_lint.core.options import Options
from dtype_lint.core.rule import Check, Finder, Hit, Site
from dtype_lint.core.shapes import Index, Prefilter, Syntax, dotted, literals, qualified_names
from dtype_lint.core.words import matches_any

_ATTR_STORE = re.compile(r"\.\s*[A-Za-z_]\w*\s*=(?!=)")
_SETATTR = re.compile(r"\bsetattr\b")
_FORWARD_STORE = re.compile(r"\.\s*forward\s*=(?!=)")
_MODULE_HOOKS = frozenset({"__getattr__", "__dir__"})
# Methods of a torch module that keep the function they are given in its hooks.
_HOOK_REGISTRARS = frozenset({"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
                              "register_full_backward_pre_hook", "register_backward_hook",
                              "register_state_dict_pre_hook", "register_state_dict_post_hook",
                              "register_load_state_dict_pre_hook", "register_load_state_dict_post_hook",
                              "_register_state_dict_hook", "_register_load_state_dict_pre_hook"})
# Methods that put their argument into a container (a list, dict or set attribute).
_CONTAINER_ADDS = frozenset({"append", "extend", "insert", "add", "setdefault"})
_CONTAINER_STORE = re.compile(r"\.\s*(?:append|extend|insert|add|setdefault)\s*\(|\]\s*=(?!=)")


def _words(options: Options) -> dict | None:
    """The words every finder of this module follows (the configured pipeline stages are
    literals of dotted globs: None where one has none, then files are parsed whole)."""
    stages = literals(options.pipeline_stages)
    if stages is None:
        return None
    return dict(import_words=("Dataset", "lambda", "partial"), configured=tuple(stages),
                value_words=("lambda", "partial", "Dataset"), body_words=BODY_WORDS)


class AttributeStores(Finder):
    """A callable stored as an attribute, or in a container, of an object pickled whole."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        words = _words(options)
        if words is None:
            return None
        return Prefilter(
            lambda t, lc, u: bool(
                (_attr_store(t) and (
                    (lc or generator_words(t)) if u is None else _callable_store(t, u, options.transform_classes)))
                or ("forward" in t and _FORWARD_STORE.search(t))
                or (lc and _CONTAINER_STORE.search(t) and (u is None or _container_store(t, u)))
                or returns_local(lc, u)
                # A store in a `finally` block: the flow takes the attribute as restored.
                or ("finally" in t and _attr_store(t) and (u is None or _restores(u.index)))),
            **words)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Attribute):
                self._store(target.target.value, target.target.attr.value, node.value)
            elif isinstance(target.target, cst.Subscript) and isinstance(target.target.value, cst.Attribute):
                # self.table[key] = value: the value is kept in the object's container
                held = target.target.value
                self._store(held.value, held.attr.value, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "setattr" and len(node.args) == 3:
            # setattr(obj, "name", value) stores like obj.name = value.
            self._store(node.args[0].value, attribute_key(node.args[1].value, self.ctx), node.args[2].value)
        elif (isinstance(func, cst.Attribute) and func.attr.value in _CONTAINER_ADDS
              and isinstance(func.value, cst.Attribute)):
            # self.funcs.append(value): kept in a container the object holds
            for arg in node.args:
                self._store(func.value.value, func.value.attr.value, arg.value)

    def _store(self, receiver: cst.BaseExpression, attr: str, value: cst.BaseExpression) -> None:
        if attr in _MODULE_HOOKS:
            return  # PEP 562 hooks: only a Python module's attribute means anything there
        # Only a module has a `forward` to replace: whatever an instance is called, it is
        # one, unless the file builds it from a class it knows is not. A class's attribute
        # is no instance's: pickle names the class.
        held_by = owner(receiver, self.ctx, self.options) or (
            Owner("a module (its forward)", "medium", "only a module has a forward to replace")
            if attr == "forward" and not names_class(receiver) and constructed_class(receiver, self.ctx) is None
            else None)
        flow = FileFlow.of(self.ctx)
        if held_by is None or attr in flow.restored:
            return  # a temporary swap: the file sets the attribute back in a `finally`
        cls = self.ctx.method_class() if isinstance(receiver, cst.Name) and receiver.value == "self" else None
        steps = self.ctx.class_steps(cls.name) if cls is not None else ()
        self.found(site_of(value, held_by, value=value, attributes=False, steps=steps, attr=attr))
        if attr == "forward" and not flow.sources(value, PICKLING_IN_FILE, attributes=False):
            for candidate in _branches(value):
                if self._wraps_forward(candidate):
                    self.found(site_of(candidate, held_by, kind="a wrapper's closure"))

    def _wraps_forward(self, value: cst.BaseExpression) -> bool:
        """`wrap(model.forward)` or `decorator(...)(model.forward)`: a closure around forward."""
        if not isinstance(value, cst.Call):
            return False
        return any(
            isinstance(arg.value, cst.Attribute) and arg.value.attr.value in ("forward", "__func__")
            or "forward" in self.ctx.module.code_for_node(arg.value)
            for arg in value.args
        )


@dataclasses.dataclass(frozen=True)
class Kept:
    """What the sanitizers read of a store: the attribute (None for a hook or a
    constructor's argument) and the owner that keeps it."""

    attr: str | None
    owner: Owner


def site_of(node: cst.CSTNode, held_by: Owner, value: cst.BaseExpression | None = None, kind: str | None = None,
          attr: str | None = None, **rest) -> Site:
    """A callable kept by ``held_by``: as sure as that the owner is pickled whole."""
    fields = {"owner": held_by.what, **({"kind": kind} if kind else {})}
    return Site(node, fields, value=value, context=Kept(attr, held_by), confidence=held_by.confidence,
                basis=held_by.basis, **rest)


def _one_shot(ctx, options: Options, hit: Hit) -> bool:
    """A local function that sets the attribute it is stored under back when it is
    called (a one-shot redirect that restores itself)."""
    source, attr = hit.source, hit.site.context.attr
    return (source is not None and attr is not None and isinstance(source.made, cst.FunctionDef)
            and bool(re.search(rf"\.\s*{re.escape(attr)}\s*=(?!=)", ctx.module.code_for_node(source.made.body))))


def _dataset_without_workers(ctx, options: Options, hit: Hit) -> bool:
    """A dataset whose file hands datasets only to loaders with no workers (a dataset
    crosses only where a loader with workers receives it; one in another file may)."""
    if not hit.site.context.owner.dataset:
        return False
    loaders = [call for call in ctx.file_index()(ast.Call) if (getattr(call.func, "attr", None)
                                                               or getattr(call.func, "id", "")) == "DataLoader"]
    return bool(loaders) and not any(_workers(call) for call in loaders)


def _workers(call: ast.Call) -> bool:
    """Whether a DataLoader call may start workers: ``num_workers`` given and not 0, or
    passed through ``**kwargs``, or the sixth positional argument."""
    for keyword in call.keywords:
        if keyword.arg is None:
            return True
        if keyword.arg == "num_workers":
            return not (isinstance(keyword.value, ast.Constant) and keyword.value.value == 0)
    return len(call.args) > 5


ONE_SHOT_REDIRECT = Check("a one-shot redirect: the function sets the attribute back when it is called", _one_shot)
DATASET_WITHOUT_WORKERS = Check("a dataset this file hands only to loaders without workers",
                                _dataset_without_workers, demotes="low")


class Hooks(Finder):
    """A hook registered on a model: handed back, ``self`` in a class pickled whole, or one the code holds."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        words = _words(options)
        return None if words is None else Prefilter(lambda t, lc, u: bool(
            "register_" in t and "hook" in t and may_make_source(t, lc, u)),
                                                    **words)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._discarded: set[int] = set()  # registrations whose handle nobody keeps

    def visit_Expr(self, node: cst.Expr) -> None:
        if isinstance(node.value, cst.Call):
            self._discarded.add(id(node.value))

    def visit_Call(self, call: cst.Call) -> None:
        """``m.register_forward_hook(f)`` in a function that hands the model back
        (``return model``, ``m`` being it or one of its submodules), on ``self`` (or one
        of its submodules) in a method of a class pickled whole, or on a model an engine
        or a patch function holds: the model keeps ``f`` in its hooks, and whoever saves
        or spawns it pickles them. A temporary hook (a handle's ``.remove()`` in the same
        function) stays in the process."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _HOOK_REGISTRARS and call.args):
            return
        function = self.ctx.function
        root = _cst_root(func.value)
        while isinstance(root, cst.Call):
            root = _cst_root(root.func)
        if function is None or not isinstance(root, cst.Name):
            return
        body = self.ctx.module.code_for_node(function.node)
        if ".remove()" in body:
            return
        registrar = func.attr.value
        holder = owner(root, self.ctx, self.options) if root.value == "self" else None
        if holder is not None:
            held_by = dataclasses.replace(holder, what=f"{holder.what}'s hooks ({registrar} keeps it)")
        elif root.value == "self" and func.value is root:
            return
        elif re.search(rf"\breturn\s+{re.escape(root.value)}\s*(?:[,)#]|$)", body, re.MULTILINE):
            held_by = Owner(f"a module's hooks ({registrar} keeps it)")
        else:
            # A model the function is handed or holds (an engine, a trainer, a patch
            # function): the model keeps the hook whoever installs it (POLICY.md F2.1),
            # unless the object that installs it removes it when its work ends.
            model = modules(self.ctx, self.options).evidence(root if root.value != "self" else func.value)
            if model is None:
                return
            # A handle that is kept may be removed by another method; a discarded one never is.
            removed = ".remove()" in self.ctx.text and id(call) not in self._discarded
            # An inspection tool hooks a model it only runs for inference (POLICY.md
            # F2.2): no_grad, eval mode or an inference function, and nothing here trains.
            inspecting = not removed and not training_seen(self.ctx, self.options) and paths(
                self.ctx, self.options).path(call, func.value) is not None
            held_by = Owner(f"a model's hooks ({registrar} keeps it; nothing here removes it)",
                            "low" if removed or inspecting else weakest(model.confidence, "medium"),
                            "this file removes hooks elsewhere" if removed else
                            "the model it hooks is run for inference here and nothing trains it "
                            "(an inspection tool's hook)" if inspecting else
                            "a hook installed on a model the code holds, which keeps it until removed")
        self.found(site_of(call.args[0].value, held_by, value=call.args[0].value))


class ConstructorArguments(Finder):
    """A callable given to a constructor that keeps it: a dataset's, a pipeline stage's, a
    module's whose ``__init__`` stores the argument (in this file or another)."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        words = _words(options)
        if words is None:
            return None
        owners = ("Dataset", *words["configured"])  # literals: `in` finds them faster than a regex
        return Prefilter(
            lambda t, lc, u: bool(
                (lc and any(name in t for name in owners))
                # (a factory's call too: `Dataset(transform=self.default_transforms())`)
                or ((lc if u is None else may_make_source(t, lc, u, via_self=False, imported=False)) and (
                    u is None or _constructs_pickled(t, u)))),
            **words)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "setattr" and len(node.args) == 3:
            return
        if (isinstance(func, cst.Attribute) and func.attr.value in _HOOK_REGISTRARS and node.args) or (
                isinstance(func, cst.Attribute) and func.attr.value in _CONTAINER_ADDS
                and isinstance(func.value, cst.Attribute)):
            return  # a hook or a container's add (the other finders')
        # `super().__init__(...)`: the first base's constructor, run on an instance of the
        # class the call is in.
        holder = self.ctx.method_class() if _super_init(func) else None
        qualified = (holder.bases[0] if holder.bases else None) if holder else self.ctx.resolve(func)
        if not qualified:
            return
        kinds = self.ctx.kinds_of(qualified)
        name = holder.name if holder else qualified.rsplit(".", 1)[-1]
        if "dataset" in kinds:
            held_by = Owner(f"a {name} dataset" + (f" (super().__init__ hands it to {qualified})" if holder else ""),
                            dataset=True)
        elif matches_any(qualified, self.options.pipeline_stages):
            held_by = Owner(f"a dataset pipeline (a {qualified} stage)", dataset=True)
        elif "torch_module" in kinds:
            self._kept_by_constructor(node, qualified, name)
            return
        else:
            return
        params, only_called = self._only_called(qualified)
        steps = self.ctx.class_steps(qualified)
        for position, arg in enumerate(node.args):
            if _parameter(arg, position, params) not in only_called:  # the constructor only calls it
                self.found(site_of(arg.value, held_by, value=arg.value, steps=steps))

    def _only_called(self, qualified: str) -> tuple[list[str], frozenset[str]]:
        """A class's constructor parameters, and those it only calls, where the project
        model reads its ``__init__`` (in this file or another); nothing known otherwise."""
        view = self.ctx.view
        found = view.local(self.ctx.source or "", qualified, self.ctx.file_tree()) if view else None
        if found is None or not isinstance(found.node, ClassSummary):
            return [], frozenset()
        return found.node.init_params, frozenset(found.node.only_called)

    def _kept_by_constructor(self, call: cst.Call, qualified: str, holder: str) -> None:
        """A module's constructor that keeps an argument on ``self``, in this file or
        another (the project model's summary of the class): a callable passed there is
        an attribute of the module (``holder``'s instance: the class's, or a subclass's
        that runs it through ``super().__init__``)."""
        found = self.ctx.view.local(self.ctx.source or "", qualified, self.ctx.file_tree()) if self.ctx.view else None
        if found is None or not isinstance(found.node, ClassSummary) or not found.node.stores:
            return
        for position, arg in enumerate(call.args):
            param = _parameter(arg, position, found.node.init_params)
            if param not in found.node.stores:
                continue
            store = found.step(f"{found.name}.__init__ keeps `{param}` on self", found.node.stores[param])
            held_by = Owner(f"a {holder} module by {found.name}.__init__ ({store.path}:{store.line})")
            self.found(site_of(arg.value, held_by, value=arg.value,
                            steps=(store, *self.ctx.class_steps(qualified))))


class ClassBodyLambdas(Finder):
    """A lambda in a class body that a module's constructor keeps through a default."""

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        words = _words(options)
        return None if words is None else Prefilter(
            lambda t, lc, u: bool(lc and u is not None and _lambda_member(u)), **words)

    def visit_Assign(self, node: cst.Assign) -> None:
        """A lambda in a class body (an Enum of distance functions, say) is named
        ``Holder.<lambda>``, which pickle cannot import. It is reported where a module
        of this file keeps such a member: a constructor's default (``metric=Holder.COSINE``)
        that ``__init__`` stores on ``self``; the finding's path shows the store."""
        value, ctx = node.value, self.ctx
        if not (isinstance(value, cst.Lambda) and not ctx.in_function and ctx.current_class):
            return
        holder = ctx.current_class.name
        view = ctx.view
        if view is None or ctx.current_class.local:
            return
        own = view.own(ctx.text, ctx.file_tree())
        for name, cls in own.classes.items():
            kept = [p for p, default in cls.init_defaults.items() if default.split(".")[0] == holder and p in cls.stores]
            if not kept or not any(ctx.kinds_of(qualify(own, base)) & {"torch_module", "dataset"}
                                   for base in cls.bases):
                continue
            store = Step(shown(view.path), *cls.stores[kept[0]], f"{name}.__init__ keeps `{kept[0]}` (default "
                                                                 f"{cls.init_defaults[kept[0]]}) on self")
            held_by = Owner(f"a {name} module by {name}.__init__ ({store.path}:{store.line})")
            self.found(site_of(value, held_by, kind=f"a lambda in the body of {holder}", steps=(store,)))
            return


def _parameter(arg: cst.Arg, position: int, params: list[str]) -> str | None:
    """The constructor parameter an argument binds (None for `*args`/`**kwargs` or past
    the parameters)."""
    if arg.star:
        return None
    return arg.keyword.value if arg.keyword else params[position] if position < len(params) else None




def _ast_root(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node




def _branches(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values an expression may evaluate to, through conditional expressions."""
    if isinstance(value, cst.IfExp):
        return _branches(value.body) + _branches(value.orelse)
    return [value]




def _attr_store(text: str) -> bool:
    """Whether the text may store an attribute (`a.b = ...`) or call ``setattr``. Two
    searches: a regex that starts with a literal is searched far faster than an
    alternation."""
    return bool(_ATTR_STORE.search(text) or ("setattr" in text and _SETATTR.search(text)))





def _cst_root(node: cst.BaseExpression) -> cst.BaseExpression:
    """The head of an attribute chain (``model`` in ``model.encoder.head``)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node


# The finders' shapes, checked on CPython's ast by the prefilter.
def _callable_store(text: str, u: Syntax, transforms: tuple[str, ...]) -> bool:
    """DTL204: an attribute of ``self``, of what may be a module, or of a name bound to a
    constructor call (an instance the file constructs) assigned (or ``setattr``) a value
    the flow may take for a source (see ``unpicklable_shapes.callable_stores``), in a unit whose
    text is ``text``."""
    stores = callable_stores(text, u)
    if not stores:
        return False
    known = u.names()
    return any(_pickled_self(u, transforms) if isinstance(owner, ast.Name) and owner.id == "self"
               else may_be_module(owner, known, 0)
               or may_be_module(_ast_root(owner), known, 0)
               or (isinstance(owner, ast.Name) and any(_may_construct(v) for v in known.bindings.get(owner.id, ())))
               for owner, _ in stores)


def _pickled_self(u: Syntax, transforms: tuple[str, ...]) -> bool:
    """Whether ``self`` in the unit may be an instance pickled whole (``_pickled_whole``
    of the rule): for a method of a top-level class, what its bases make it (a module
    or a dataset, by the project model), a data module, or a configured transform
    class; anything else where the unit defines classes of its own or the kinds are
    not known."""
    cls = u.owner
    if cls is None or u.index(ast.ClassDef):
        return True
    kinds = u.names().class_kinds(cls.name)
    return kinds is None or bool(kinds & {"torch_module", "dataset"}) or any(
        n.endswith("DataModule") for n in (cls.name, *(dotted(b) or "" for b in cls.bases))) or matches_any(
        cls.name, transforms) or _mixin_of_a_module(u, cls.name)


def _mixin_of_a_module(u: Syntax, name: str) -> bool:
    """Whether a module class of the file derives from the class too (crossing's mixin)."""
    tree = u.file_tree
    return tree is None or any(
        any(isinstance(b, ast.Name) and b.id == name for b in sub.bases)
        and "torch_module" in (u.names().class_kinds(sub.name) or {"torch_module"})
        for sub in tree.body if isinstance(sub, ast.ClassDef))


def _container_store(text: str, u: Syntax) -> bool:
    """A value the flow may take for a source put into an attribute's container:
    ``x.funcs.append(v)``, ``x.table[k] = v``."""
    added = any(isinstance(call.func, ast.Attribute) and call.func.attr in _CONTAINER_ADDS
                and isinstance(call.func.value, ast.Attribute) for call, _ in callable_arguments(text, u))
    return added or any(
        isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute)
        and callable_value(text, u, node.value) for node in u.index(ast.Assign) for target in node.targets)


def _lambda_member(u: Syntax) -> bool:
    """A name bound to a lambda outside functions (a class body's member)."""
    return any(isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) for node in u.nodes)


def _constructs_pickled(text: str, u: Syntax) -> bool:
    """A call that may construct a dataset, or a module whose constructor keeps the
    parameter an argument binds (the project model's summary of the class, which
    ``_kept_by_constructor`` reads), with an argument the flow may take for a source;
    ``super().__init__(...)`` constructs the first base of the class it is in (any
    base where the unit is not a member of a top-level class)."""
    arguments = callable_arguments(text, u)
    if not arguments:
        return False
    names = u.names()
    for call, value in arguments:
        if _super_init(call.func):
            if u.owner is None:
                return True
            classes = u.owner.bases[:1]
        else:
            classes = [call.func]
        slot = next((k.arg for k in call.keywords if k.value is value), None) or next(
            (i for i, a in enumerate(call.args) if a is value), None)
        if slot is not None and any(pickled_type(c, names) and any(
                names.constructor_keeps(q, slot) for q in qualified_names(c, names)) for c in classes):
            return True
    return False


def _super_init(func: ast.AST | cst.BaseExpression) -> bool:
    """``super().__init__`` or ``super(Cls, self).__init__`` (in ``ast`` or LibCST)."""
    if isinstance(func, ast.Attribute):
        call, attr = func.value, func.attr
        callee = call.func if isinstance(call, ast.Call) else None
        return attr == "__init__" and isinstance(callee, ast.Name) and callee.id == "super"
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
        callee = func.value.func
        return func.attr.value == "__init__" and isinstance(callee, cst.Name) and callee.value == "super"
    return False


def _may_construct(value: ast.AST) -> bool:
    """A call that may make an instance (core.flow's constructed_class): of a class named
    in CapWords, ``cls(...)``, ``type(self)(...)``, ``self.__class__(...)``."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name[:1].isupper() or name in ("cls", "__class__") or (
        isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type")


def _restores(index: Index) -> bool:
    """Whether the unit stores an attribute (or calls ``setattr``) in a ``finally`` block."""
    return any(isinstance(node, (ast.Assign, ast.Call)) for t in index(ast.Try, getattr(ast, "TryStar", ast.Try))
               for stmt in t.finalbody for node in ast.walk(stmt)
               if (isinstance(node, ast.Assign) and any(isinstance(x, ast.Attribute) for x in node.targets))
               or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"))
