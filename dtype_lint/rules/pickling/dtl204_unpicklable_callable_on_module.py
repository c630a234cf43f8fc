"""DTL204: a lambda or local function stored on an nn.Module, LightningModule or Dataset."""

from __future__ import annotations

import ast
import re

from dtype_lint.core.deferred import cst
from dtype_lint.core.flow import PICKLING_IN_FILE, FileFlow, attribute_key
from dtype_lint.core.finding import Step
from dtype_lint.core.model.project import qualify, shown
from dtype_lint.core.model.summary import ClassSummary
from dtype_lint.core.shapes import (Index, Prefilter, Syntax, dotted, literals, may_be_module, pickled_type,
                                    qualified_names)
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options
from dtype_lint.rules.patterns import matches_any, module_kind
from dtype_lint.rules.pickling.flow_shapes import (BODY_WORDS, callable_arguments, callable_stores, callable_value,
                                                  generator_words, may_make_source, returns_local)

_ATTR_STORE = re.compile(r"\.\s*[A-Za-z_]\w*\s*=(?!=)")
_SETATTR = re.compile(r"\bsetattr\b")
_FORWARD_STORE = re.compile(r"\.\s*forward\s*=(?!=)")

class CallableOnModule(Rule):
    doc = RuleDoc(
        code="DTL204",
        name="unpicklable-callable-on-module",
        summary="Lambda or local function stored on a module or dataset",
        what_it_does="""
            Checks for a value pickle cannot store by reference (a lambda, a local
            function or class, a generator, a factory's local function, a
            `functools.partial` of one or a method bound from one with
            `types.MethodType`: the sources of DTL201, followed within the file
            through names, `x or (lambda ...)`, conditional expressions and displays)
            stored on an object that is pickled whole:

            - an attribute of `self` in a method of a `torch.nn.Module`,
              `LightningModule`, `Dataset`, a Lightning data module (a class whose name
              or base ends in `DataModule`), or a transform/processor/collator/reader
              class (`transform-classes`), which datasets hold;
            - an attribute (or `setattr`) of a receiver known to be a model, or of an
              instance the file constructs of such a class: `ds = MyDataset(...)`,
              `dm = cls()` in a classmethod, `type(self)()`;
            - an attribute's container: `self.funcs.append(...)`, `self.table[k] = ...`,
              and what a `defaultdict` keeps (its default factory);
            - an attribute of a submodule or any object inside a model
              (`model.encoder.head = Local()`): it is pickled with the model;
            - a hook registered on a model that the function hands back
              (`m.register_forward_hook(f)` ... `return model`), or on `self` (or a
              submodule of it) in a method of a class pickled whole
              (`self._register_state_dict_hook(remap)` in a module's `__init__`): the
              model keeps it; hooks an engine or callback registers on a model it holds,
              and hooks whose handle is removed, stay in their process and are not
              reported;
            - a lambda in a class body (`class Metric(Enum): COSINE = lambda ...`),
              named `Metric.<lambda>`, which pickle cannot import: reported where a
              module's constructor of this file keeps a parameter whose default is a
              member of that class;
            - an argument of a `Dataset` constructor (a class of the file or project
              that derives from one, or any class of `torchvision.datasets`,
              `torchaudio.datasets` and `torchtext.datasets`) or of a dataset-pipeline
              stage (`wds.map_dict(text=lambda t: ...)`); not one the constructor only
              calls, where the project model reads it (`label_fn(path)` while the items
              are listed keeps nothing). A lambda that a factory
              method returns (`def default_transforms(self): return lambda ...`) is
              reported once, where it is written, however many loaders call the
              factory; a closure a wrapper factory builds from its arguments is
              reported where it is stored;
            - an argument that a module's constructor keeps on `self`, in this file or
              another: the project model reads the class's `__init__` where it is
              defined, and the finding's path shows the store and the bases;
            - an argument of `super().__init__(...)` (or `super(Cls, self).__init__`) in a
              subclass of a dataset, or of a module whose constructor keeps that
              parameter: the first base's constructor runs on the subclass's instance
              and keeps the value there (`super().__init__(parser=Wrapper(tok))`);
            - a model's `forward` replaced by a wrapper built around it
              (`model.forward = wrap(model.forward)`), which returns a closure;
            - any object's `forward` replaced by such a value, whatever the object is
              called (`block.forward = MethodType(local, block)`): only a module has a
              `forward` to replace. Not a class's (`cls.forward = ...`: pickle names the
              class), not an instance the file builds from a plain class of its own,
              and not a local function that sets the attribute back when it is called
              (a one-shot redirect).

            Test code is not reported: a test pickles what it builds only on purpose,
            and fails on its own if it does (processes a test starts are DTL201-203's).
            """,
        why_bad="""
            Modules and datasets are pickled whole, with the transforms and pipeline
            stages they hold: datasets when a `DataLoader` starts
            workers under `spawn`/`forkserver` (the Linux default since Python 3.14),
            modules by `torch.save(model)`, `copy.deepcopy` (EMA, checkpoints) and
            spawned trainers. One lambda attribute makes the whole object unpicklable,
            and the error names the lambda, not the line that stored it.
            """,
        example="""
            class Block(nn.Module):
                def __init__(self, act):
                    super().__init__()
                    self.act = lambda x: x * torch.sigmoid(x)
            """,
        use_instead="""
            class Block(nn.Module):
                def __init__(self, act):
                    super().__init__()
                    self.act = nn.SiLU()
            """,
        known_limits="""
            Only classes derived (in this file, or through the files and installed
            packages the project model reaches) from the torch, Lightning or Dataset bases, data modules and transform classes by name, `self` in their
            methods, instances constructed in the same file, and receivers recognised as
            models (see `module-names`) are checked; a lambda stored on class level is
            not an instance attribute and is not reported. A store of one attribute of
            `self` into another is not reported again. An object handed to a dataset
            elsewhere (a reader a dataset calls) is known only by its class name. A wrapper that returns a module-level
            function is still reported when it wraps `forward`. A transform
            class is known by its name only, and is reported whether or not it ever
            reaches a dataset, and a pipeline stage
            (`pipeline-stages`) whether or not its loader has workers. What a factory of
            another file returns is followed at DTL201-203's sinks (process targets,
            loaders, wrappers), not at stores: `self.fn = make_fn()` with `make_fn` in
            another file is not reported here.
            """,
    )
    message = (
        "{kind} stored on {owner} makes it unpicklable: DataLoader workers under "
        "spawn/forkserver (the Linux default since Python 3.14), torch.save and deepcopy "
        "fail; use a module-level function or an nn.Module such as nn.SiLU()"
    )
    options_used = ("module-names", "module-bases", "pipeline-stages", "transform-classes")
    # A test builds objects to check them and pickles one only on purpose (then the test
    # fails and says so); a process it starts is another matter (DTL201-203 report those).
    reports_in_tests = False
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        stages = literals(options.pipeline_stages)
        if stages is None:
            return None
        owners = ("Dataset", *stages)  # literals: `in` finds them faster than a regex
        return Prefilter(
            lambda t, lc, u: bool(
                (_attr_store(t) and (
                    (lc or generator_words(t)) if u is None
                    else _callable_store(t, u, options.transform_classes)))
                or ("forward" in t and _FORWARD_STORE.search(t))
                or (lc and any(owner in t for owner in owners))
                # (a factory's call too: `Dataset(transform=self.default_transforms())`)
                or ((lc if u is None else may_make_source(t, lc, u, via_self=False, imported=False)) and (
                    u is None or _constructs_pickled(t, u)))
                or (lc and _CONTAINER_STORE.search(t) and (u is None or _container_store(t, u)))
                or (lc and "register_" in t and "hook" in t)
                or (lc and u is not None and _lambda_member(u))
                or returns_local(lc, u)
                # A store in a `finally` block: the flow takes the attribute as restored.
                or ("finally" in t and _attr_store(t) and (u is None or _restores(u.index)))),
            import_words=("Dataset", "lambda", "partial"),
            configured=tuple(stages),
            value_words=("lambda", "partial", "Dataset"),
            body_words=BODY_WORDS,
        )

    valid = (
        "class Block(nn.Module):\n    act = staticmethod(lambda x: x)",
        "class Block(nn.Module):\n    def __init__(self):\n        self.act = nn.SiLU()",
        "class Config:\n    def __init__(self):\n        self.fn = lambda x: x",
        "class Block(nn.Module):\n    def forward(self, x):\n        f = lambda y: y\n        return f(x)",
        "import webdataset as wds\ndef tok(t): ...\nstage = wds.map_dict(text=tok)",
        "class Resize:\n    def __init__(self):\n        self.size = 4\n    def __call__(self, x): ...",
        "class Registry:\n    def __init__(self):\n        self.make = lambda: {}",
        "class Registry:\n    def __init__(self, make):\n        self.make = make\n"
        "class Defaults(Registry):\n    def __init__(self):\n        super().__init__(lambda: {})",
        "def redirect(module):\n    original = module.forward\n    def once(*a):\n"
        "        module.forward = original\n        return a\n    module.forward = once",
    )
    invalid = (
        Invalid("class Block(nn.Module):\n    def __init__(self):\n        self.act = lambda x: x"),
        Invalid("from torch.utils.data import Dataset\nclass Manifest(Dataset):\n    def __init__(self, parser):\n"
                "        self.parser = parser\nclass Chars(Manifest):\n    def __init__(self):\n"
                "        super().__init__(lambda text: list(text))"),
        Invalid("from torch.utils.data import Dataset\nclass Ds(Dataset):\n"
                "    def __init__(self):\n        self.tf = lambda x: x"),
        Invalid("def prepare(model):\n    def forward(*a):\n        return 1\n    model.forward = forward"),
        Invalid("def prepare(model):\n    model.forward = wrap_fp32(model.forward)"),
        Invalid("class Block(nn.Module):\n    def __init__(self, act):\n"
                "        self.act = nn.ReLU() if act else lambda x: x"),
        Invalid("from torch.utils.data import Dataset\nclass MyDataset(Dataset): ...\n"
                "ds = MyDataset(items, lambda x: x)"),
        Invalid("import webdataset as wds\npipeline = [wds.map_dict(text=lambda t: tokenize(t)[0])]"),
        Invalid("class TextProcessor:\n    def __init__(self):\n        self.fn = lambda x: x\n"
                "    def __call__(self, x):\n        return self.fn(x)"),
        Invalid("class Net(nn.Module):\n    def __init__(self, head=None):\n"
                "        self.head = head or (lambda x: x)"),
        Invalid("class Net(nn.Module):\n    def __init__(self):\n        self.fns = []\n"
                "        self.fns.append(lambda x: x)"),
        Invalid("import collections\nclass Net(nn.Module):\n    def __init__(self):\n"
                "        self.weights = collections.defaultdict(lambda: 1.0)"),
        Invalid("class Scale(nn.Module):\n    def __init__(self, fn):\n        super().__init__()\n"
                "        self.fn = fn\nhead = Scale(lambda x: x * 2)"),
        Invalid("class PairDataModule:\n    @classmethod\n    def build(cls, ds):\n"
                "        def loader():\n            return ds\n"
                "        dm = cls()\n        dm.train_dataloader = loader"),
        Invalid("class Remap(nn.Module):\n    def __init__(self):\n        def rename(m, sd, *a):\n"
                "            return sd\n        self._register_state_dict_hook(rename)"),
        Invalid("import types\ndef patch(blocks):\n    for block in blocks:\n"
                "        block.forward = types.MethodType(lambda self, x: x, block)"),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Lambda) and not self.ctx.in_function and self.ctx.current_class:
            self._class_body_lambda(node.value, self.ctx.current_class.name)
        for target in node.targets:
            if isinstance(target.target, cst.Attribute):
                self._check_store(target.target.value, target.target.attr.value, node.value)
            elif isinstance(target.target, cst.Subscript) and isinstance(target.target.value, cst.Attribute):
                # self.table[key] = value: the value is kept in the object's container
                held = target.target.value
                self._check_store(held.value, held.attr.value, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "setattr" and len(node.args) == 3:
            # setattr(obj, "name", value) stores like obj.name = value.
            self._check_store(node.args[0].value, attribute_key(node.args[1].value, self.ctx), node.args[2].value)
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _HOOK_REGISTRARS and node.args:
            self._hook(node)
            return
        if (isinstance(func, cst.Attribute) and func.attr.value in _CONTAINER_ADDS
                and isinstance(func.value, cst.Attribute)):
            # self.funcs.append(value): kept in a container the object holds
            for arg in node.args:
                self._check_store(func.value.value, func.value.attr.value, arg.value)
            return
        # `super().__init__(...)`: the first base's constructor, run on an instance of the
        # class the call is in.
        holder = self.ctx.method_class() if _super_init(func) else None
        qualified = (holder.bases[0] if holder.bases else None) if holder else self.ctx.resolve(node.func)
        if not qualified:
            return
        kinds = self.ctx.kinds_of(qualified)
        name = holder.name if holder else qualified.rsplit(".", 1)[-1]
        if "dataset" in kinds:
            owner = f"a {name} dataset" + (f" (super().__init__ hands it to {qualified})" if holder else "")
        elif matches_any(qualified, self.options.pipeline_stages):
            owner = f"a dataset pipeline (a {qualified} stage)"
        elif "torch_module" in kinds:
            self._kept_by_constructor(node, qualified, name)
            return
        else:
            return
        flow = FileFlow.of(self.ctx)
        params, only_called = self._only_called(qualified)
        for position, arg in enumerate(node.args):
            if _parameter(arg, position, params) in only_called:
                continue  # the constructor only calls it: nothing of it is kept
            for source in flow.sources(arg.value, PICKLING_IN_FILE):
                self.report(source.at, self.message.format(kind=source.kind, owner=owner),
                            flow=(*source.steps, *self.ctx.class_steps(qualified)))

    def _only_called(self, qualified: str) -> tuple[list[str], frozenset[str]]:
        """A class's constructor parameters, and those it only calls, where the project
        model reads its ``__init__`` (in this file or another); nothing known otherwise."""
        view = self.ctx.view
        found = view.local(self.ctx.source or "", qualified, self.ctx.file_tree()) if view else None
        if found is None or not isinstance(found.node, ClassSummary):
            return [], frozenset()
        return found.node.init_params, frozenset(found.node.only_called)

    def _class_body_lambda(self, value: cst.Lambda, holder: str) -> None:
        """A lambda in a class body (an Enum of distance functions, say) is named
        ``Holder.<lambda>``, which pickle cannot import. It is reported where a module
        of this file keeps such a member: a constructor's default (``metric=Holder.COSINE``)
        that ``__init__`` stores on ``self``; the finding's path shows the store."""
        view = self.ctx.view
        if view is None or self.ctx.current_class.local:  # type: ignore[union-attr]
            return
        own = view.own(self.ctx.source or self.ctx.module.code, self.ctx.file_tree())
        for name, cls in own.classes.items():
            kept = [p for p, default in cls.init_defaults.items() if default.split(".")[0] == holder and p in cls.stores]
            if not kept or not any(self.ctx.kinds_of(qualify(own, base)) & {"torch_module", "dataset"}
                                   for base in cls.bases):
                continue
            store = Step(shown(view.path), *cls.stores[kept[0]], f"{name}.__init__ keeps `{kept[0]}` (default "
                                                                 f"{cls.init_defaults[kept[0]]}) on self")
            owner = f"a {name} module by {name}.__init__ ({store.path}:{store.line})"
            self.report(value, self.message.format(kind=f"a lambda in the body of {holder}", owner=owner),
                        flow=(store,))
            return

    def _hook(self, call: cst.Call) -> None:
        """``m.register_forward_hook(f)`` in a function that hands the model back
        (``return model``, ``m`` being it or one of its submodules), or on ``self`` (or
        one of its submodules) in a method of a class pickled whole: the model keeps
        ``f`` in its hooks, and whoever saves or spawns it pickles them. Hooks an engine
        or a callback registers at run time on a model it holds, and temporary hooks (a
        handle's ``.remove()``), stay in the process."""
        function = self.ctx.function
        root = _root(call.func.value)  # type: ignore[union-attr]
        while isinstance(root, cst.Call):
            root = _root(root.func)
        if function is None or not isinstance(root, cst.Name):
            return
        body = self.ctx.module.code_for_node(function.node)
        if ".remove()" in body:
            return
        registrar = call.func.attr.value  # type: ignore[union-attr]
        if root.value == "self":
            holder = self._owner(root)
            if holder is None:
                return
            owner = f"{holder}'s hooks ({registrar} keeps it)"
        elif re.search(rf"\breturn\s+{re.escape(root.value)}\s*(?:[,)#]|$)", body, re.MULTILINE):
            owner = f"a module's hooks ({registrar} keeps it)"
        else:
            return
        for source in FileFlow.of(self.ctx).sources(call.args[0].value, PICKLING_IN_FILE):
            self.report(source.at, self.message.format(kind=source.kind, owner=owner), flow=source.steps)

    def _kept_by_constructor(self, call: cst.Call, qualified: str, holder: str) -> None:
        """A module's constructor that keeps an argument on ``self``, in this file or
        another (the project model's summary of the class): a callable passed there is
        an attribute of the module (``holder``'s instance: the class's, or a subclass's
        that runs it through ``super().__init__``)."""
        found = self.ctx.view.local(self.ctx.source or "", qualified, self.ctx.file_tree()) if self.ctx.view else None
        if found is None or not isinstance(found.node, ClassSummary) or not found.node.stores:
            return
        flow = FileFlow.of(self.ctx)
        for position, arg in enumerate(call.args):
            param = _parameter(arg, position, found.node.init_params)
            if param not in found.node.stores:
                continue
            store = found.step(f"{found.name}.__init__ keeps `{param}` on self", found.node.stores[param])
            for source in flow.sources(arg.value, PICKLING_IN_FILE):
                owner = f"a {holder} module by {found.name}.__init__ ({store.path}:{store.line})"
                self.report(source.at, self.message.format(kind=source.kind, owner=owner),
                            flow=(*source.steps, store, *self.ctx.class_steps(qualified)))

    def _check_store(self, receiver: cst.BaseExpression, attr: str, value: cst.BaseExpression) -> None:
        if attr in _MODULE_HOOKS:
            return  # PEP 562 hooks: only a Python module's attribute means anything there
        # Only a module has a `forward` to replace: whatever an instance is called, it is
        # one, unless the file builds it from a class it knows is not. A class's attribute
        # is no instance's: pickle names the class.
        owner = self._owner(receiver) or ("a module (its forward)" if attr == "forward" and not _names_class(
            receiver) and self._constructed_class(receiver) is None else None)
        if owner is None or attr in FileFlow.of(self.ctx).restored:
            return  # a temporary swap: the file sets the attribute back in a `finally`
        sources = FileFlow.of(self.ctx).sources(value, PICKLING_IN_FILE, attributes=False)
        cls = self.ctx.method_class() if isinstance(receiver, cst.Name) and receiver.value == "self" else None
        steps = self.ctx.class_steps(cls.name) if cls is not None else ()
        for source in sources:
            if isinstance(source.made, cst.FunctionDef) and re.search(
                    rf"\.\s*{re.escape(attr)}\s*=(?!=)", self.ctx.module.code_for_node(source.made.body)):
                continue  # a one-shot redirect: the function sets the attribute back when called
            self.report(source.at, self.message.format(kind=source.kind, owner=owner), flow=(*source.steps, *steps))
        if attr == "forward" and not sources:
            for candidate in _branches(value):
                if self._wraps_forward(candidate):
                    self.report(candidate, self.message.format(kind="a wrapper's closure", owner=owner))

    def _owner(self, receiver: cst.BaseExpression) -> str | None:
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            cls = self.ctx.method_class()
            return self._pickled_whole(cls.name, cls.kinds, cls.bases) if cls is not None else None
        if _python_module(receiver, self.ctx):
            return None
        if module_kind(receiver, self.ctx, self.options):
            return "a model"
        root = _root(receiver)
        if root is not receiver and isinstance(root, cst.Name) and not _python_module(root, self.ctx) and (
                module_kind(root, self.ctx, self.options)):
            # model.encoder.head = ...: a submodule (or any object) inside the model's
            # attributes is pickled with it
            return "a model (in one of its submodules)"
        if root is not receiver and isinstance(root, cst.Name) and root.value == "self":
            holder = self._owner(root)  # self.codec.ready = ...: likewise, inside self
            return f"{holder} (in one of its attributes)" if holder is not None else None
        # An instance the file constructs: `ds = MyDataset(...)`, `dm = cls()` in a
        # classmethod of a data module.
        constructed = self._constructed_class(receiver)
        if constructed is None:
            return None
        name = constructed.rsplit(".", 1)[-1]
        known = self.ctx.known_classes.get(constructed)
        if known is not None:
            return self._pickled_whole(known.name, known.kinds, known.bases)
        return self._pickled_whole(name, frozenset(self.ctx.kinds_of(constructed)), ())

    def _constructed_class(self, receiver: cst.BaseExpression) -> str | None:
        """The class of the instance a name of the file is bound to (``ref = Reference()``),
        where the file resolves it."""
        if not (isinstance(receiver, cst.Name) and isinstance(self.ctx.lookup_binding(receiver.value), cst.Call)):
            return None
        return FileFlow.of(self.ctx).constructed_class(receiver)

    def _pickled_whole(self, name: str, kinds: frozenset[str], bases: tuple[str, ...]) -> str | None:
        """How an instance of the class is pickled whole, or None."""
        if kinds & {"torch_module", "dataset"}:
            return f"a {name} instance"
        # Lightning data modules go to ddp_spawn workers with the trainer.
        if any(n.endswith("DataModule") for n in (name, *bases)):
            return f"a {name} data module (spawned trainers pickle it)"
        # Datasets and loaders hold transforms, processors, collators and readers, and
        # pickle them with themselves.
        if matches_any(name, self.options.transform_classes):
            return f"a {name} instance (datasets hold it)"
        return None

    def _wraps_forward(self, value: cst.BaseExpression) -> bool:
        """`wrap(model.forward)` or `decorator(...)(model.forward)`: a closure around forward."""
        if not isinstance(value, cst.Call):
            return False
        return any(
            isinstance(arg.value, cst.Attribute) and arg.value.attr.value in ("forward", "__func__")
            or "forward" in self.ctx.module.code_for_node(arg.value)
            for arg in value.args
        )


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
_MODULE_MAKERS = frozenset({"importlib.import_module", "types.ModuleType", "ModuleType", "sys.modules.get"})


def _names_class(receiver: cst.BaseExpression) -> bool:
    """Whether the receiver is named as a class (``cls``, ``layout_cls``,
    ``experts_class``, a CapWords name) or is ``type(x)``."""
    if isinstance(receiver, cst.Call):
        return isinstance(receiver.func, cst.Name) and receiver.func.value == "type"
    name = receiver.value if isinstance(receiver, cst.Name) else (
        receiver.attr.value if isinstance(receiver, cst.Attribute) else "")
    return name == "cls" or name.endswith(("_cls", "_class", "klass")) or name[:1].isupper()


def _parameter(arg: cst.Arg, position: int, params: list[str]) -> str | None:
    """The constructor parameter an argument binds (None for `*args`/`**kwargs` or past
    the parameters)."""
    if arg.star:
        return None
    return arg.keyword.value if arg.keyword else params[position] if position < len(params) else None


def _python_module(receiver: cst.BaseExpression, ctx) -> bool:
    """A Python module, not a model: bound to ``sys.modules[...]``, ``import_module(...)``
    or ``ModuleType(...)``, or a parameter annotated ``ModuleType``."""
    if not isinstance(receiver, cst.Name):
        return False
    bound = ctx.lookup_binding(receiver.value)
    if isinstance(bound, cst.Subscript):
        return ctx.resolve(bound.value) == "sys.modules"
    if isinstance(bound, cst.Call):
        return ctx.resolve(bound.func) in _MODULE_MAKERS
    return bound is not None and (ctx.resolve(bound) or "").endswith("ModuleType")


def _root(node: cst.BaseExpression) -> cst.BaseExpression:
    """The head of an attribute chain (``model`` in ``model.encoder.head``)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node


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


# The rule's shape, checked on CPython's ast by the prefilter (see its Prefilter).
def _callable_store(text: str, u: Syntax, transforms: tuple[str, ...]) -> bool:
    """DTL204: an attribute of ``self``, of what may be a module, or of a name bound to a
    constructor call (an instance the file constructs) assigned (or ``setattr``) a value
    the flow may take for a source (see ``flow_shapes.callable_stores``), in a unit whose
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
        cls.name, transforms)


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
