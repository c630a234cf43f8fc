"""DTL204: a lambda or local function stored on an nn.Module, LightningModule or Dataset."""

from __future__ import annotations

import ast
import re
from typing import Callable, Sequence

from dtype_lint.core.deferred import cst
from dtype_lint.core.shapes import Index, Names, Prefilter, lines_of, literals, may_be_module, words
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options
from dtype_lint.rules.patterns import matches_any, module_kind

_ATTR_STORE = re.compile(r"\.\s*[A-Za-z_]\w*\s*=(?!=)")
_FORWARD_STORE = re.compile(r"\.\s*forward\s*=(?!=)")

class CallableOnModule(Rule):
    doc = RuleDoc(
        code="DTL204",
        name="unpicklable-callable-on-module",
        summary="Lambda or local function stored on a module or dataset",
        what_it_does="""
            Checks for a lambda, a local function or class, or a `functools.partial` of
            one, stored as an attribute of an instance of a `torch.nn.Module`,
            `LightningModule` or `Dataset` (`self.act = lambda x: x` in the class's
            methods, `model.forward = local_fn`), passed to a `Dataset` constructor or a
            dataset-pipeline stage (`wds.map_dict(text=lambda t: ...)`), stored on a
            callable object (a class with `__call__`, such as a transform or processor,
            which datasets hold), and a model's `forward` replaced by a wrapper built
            around it (`model.forward = wrap(model.forward)`), which returns a closure.
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
            Only classes derived (in the same file or by import) from the torch, Lightning
            or Dataset bases, `self` in their methods, and receivers recognised as models
            (see `module-names`) are checked; a lambda stored on class level is not an
            instance attribute and is not reported. A wrapper that returns a module-level
            function is still reported when it wraps `forward`. A transform
            class is known by its name only, and is reported whether or not it ever
            reaches a dataset, and a pipeline stage
            (`pipeline-stages`) whether or not its loader has workers.
            """,
    )
    message = (
        "{kind} stored on {owner} makes it unpicklable: DataLoader workers under "
        "spawn/forkserver (the Linux default since Python 3.14), torch.save and deepcopy "
        "fail; use a module-level function or an nn.Module such as nn.SiLU()"
    )
    options_used = ("module-names", "module-bases", "pipeline-stages", "transform-classes")
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        stages = literals(options.pipeline_stages)
        if stages is None:
            return None
        owners = words(["Dataset", *stages])
        return Prefilter(
            lambda t, lc, u: bool(
                (lc and _ATTR_STORE.search(t) and (u is None or _callable_store(u.index, u.lines, u.nodes[0], u.names)))
                or ("forward" in t and _FORWARD_STORE.search(t))
                or (lc and owners.search(t))),
            import_words=("Dataset", "lambda", "partial"),
            configured=tuple(stages),
            value_words=("lambda", "partial", "Dataset"),
        )

    valid = (
        "class Block(nn.Module):\n    act = staticmethod(lambda x: x)",
        "class Block(nn.Module):\n    def __init__(self):\n        self.act = nn.SiLU()",
        "class Config:\n    def __init__(self):\n        self.fn = lambda x: x",
        "class Block(nn.Module):\n    def forward(self, x):\n        f = lambda y: y\n        return f(x)",
        "import webdataset as wds\ndef tok(t): ...\nstage = wds.map_dict(text=tok)",
        "class Resize:\n    def __init__(self):\n        self.size = 4\n    def __call__(self, x): ...",
        "class Registry:\n    def __init__(self):\n        self.make = lambda: {}",
    )
    invalid = (
        Invalid("class Block(nn.Module):\n    def __init__(self):\n        self.act = lambda x: x"),
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
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Attribute):
                self._check_store(target.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.resolve(node.func)
        if not qualified:
            return
        if "dataset" in self.ctx.kinds_of(qualified):
            owner = f"a {qualified.rsplit('.', 1)[-1]} dataset"
        elif matches_any(qualified, self.options.pipeline_stages):
            owner = f"a dataset pipeline (a {qualified} stage)"
        else:
            return
        for arg in node.args:
            kind = self.ctx.local_callable_kind(arg.value)
            if kind:
                self.report(arg.value, self.message.format(kind=kind, owner=owner))

    def _check_store(self, target: cst.Attribute, value: cst.BaseExpression) -> None:
        owner = self._owner(target.value)
        if owner is None:
            return
        for candidate in _branches(value):
            kind = self.ctx.local_callable_kind(candidate)
            if kind:
                self.report(candidate, self.message.format(kind=kind, owner=owner))
            elif target.attr.value == "forward" and self._wraps_forward(candidate):
                self.report(candidate, self.message.format(kind="a wrapper's closure", owner=owner))

    def _owner(self, receiver: cst.BaseExpression) -> str | None:
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            cls = self.ctx.method_class()
            if cls is not None and cls.kinds & {"torch_module", "dataset"}:
                return f"a {cls.name} instance"
            # Datasets and loaders hold transforms, processors and collators, and
            # pickle them with themselves.
            if cls is not None and matches_any(cls.name, self.options.transform_classes):
                return f"a {cls.name} instance (datasets hold it)"
            return None
        return "a model" if module_kind(receiver, self.ctx, self.options) else None

    def _wraps_forward(self, value: cst.BaseExpression) -> bool:
        """`wrap(model.forward)` or `decorator(...)(model.forward)`: a closure around forward."""
        if not isinstance(value, cst.Call):
            return False
        return any(
            isinstance(arg.value, cst.Attribute) and arg.value.attr.value in ("forward", "__func__")
            or "forward" in self.ctx.module.code_for_node(arg.value)
            for arg in value.args
        )


def _branches(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values an expression may evaluate to, through conditional expressions."""
    if isinstance(value, cst.IfExp):
        return _branches(value.body) + _branches(value.orelse)
    return [value]


# The rule's shape, checked on CPython's ast by the prefilter (see its Prefilter).
def _callable_store(index: Index, lines: Sequence[str], own: ast.AST | None, names: Callable[[], Names]) -> bool:
    """DTL204: an attribute of ``self`` or of what may be a module assigned a lambda, a
    ``partial``, a wrapper of ``forward``, or a name this unit binds to one of those or
    defines as a function or class (``own``, the unit's own function, is not local to
    itself)."""
    local = {n.name for n in index(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) if n is not own}
    for node in index(ast.Assign):
        if isinstance(node.value, (ast.Lambda, ast.Call, ast.Name)):
            local.update(t.id for t in node.targets if isinstance(t, ast.Name))
    stores = [(target.value, node.value) for node in index(ast.Assign) for target in node.targets
              if isinstance(target, ast.Attribute) and _may_be_callable(node.value, local, lines)]
    if not stores:
        return False
    known = names()
    return any((isinstance(owner, ast.Name) and owner.id == "self") or may_be_module(owner, known, 0)
               for owner, _ in stores)


def _may_be_callable(value: ast.AST, local: set[str], lines: Sequence[str]) -> bool:
    if isinstance(value, ast.IfExp):
        return _may_be_callable(value.body, local, lines) or _may_be_callable(value.orelse, local, lines)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name == "partial" or "forward" in lines_of(value, lines)
    return isinstance(value, ast.Lambda) or (isinstance(value, ast.Name) and value.id in local)
