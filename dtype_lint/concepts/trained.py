"""What is trained, and what runs for inference, evaluation or export: the path a cast
of a module lies on (F3: only a cast of the model that is *trained* is a hazard).

* **Training**: a branch taken when a ``training`` flag holds, a function that steps an
  optimizer, calls ``backward()``, ``.train()``, ``fit()`` or takes gradients
  (``jax.grad``, ``value_and_grad``, ``apply_gradients``, ``optax.apply_updates``).
* **Inference**: a function that puts the same receiver in eval mode or freezes it
  (``.eval()``, ``.requires_grad_(False)``) and never back in train mode; one that trains
  nothing and readies or runs the receiver for inference (``prepare_for_inference_()``,
  ``.generate()``) or saves it to a file (checkpoint conversion), or runs under
  ``no_grad``/``inference_mode`` (decorator or ``with``), or uses an export runtime (ONNX,
  TensorRT, OpenVINO, Core ML, TF Lite, ExecuTorch); a function named for inference
  (``inference-functions``); a class that puts the receiver in eval mode and never in
  train mode, or whose ``__call__``/``forward`` runs without gradients; a script
  (``__main__``) in which nothing trains.
* A cast to another value's dtype (``.to(unet.dtype)``, ``m.half() if x.dtype is
  torch.float16 else m``) keeps what is there and is no recast.

File-wide facts come from CPython's ``ast`` of the whole file (so the prefilter, which may
hand LibCST only part of a file, cannot change them); facts about one function come from
that function's LibCST node, which the prefilter always keeps whole. Both are made once
per file, on first use.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import re
from typing import TYPE_CHECKING, Iterable

from dtype_lint.concepts.float32 import CAST_BACK
from dtype_lint.concepts.modules import DEVICE_MOVES, cst_dotted as _cst_dotted, cst_last as _cst_last
from dtype_lint.core.deferred import cst
from dtype_lint.core.rule import Check, Hit
from dtype_lint.core.flow.engine import FileFlow
from dtype_lint.core.shapes import Index, dotted, last_name
from dtype_lint.core.words import matches_any, words_of

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.options import Options


_CASTING_CLASS_WORDS = frozenset({"precision", "cast", "casting", "caster", "autocast", "recast"})
# Words of a function's name that make it an explicit casting helper (`tree_cast`,
# `cast_params`, `convert_to_fp16`; also options.CAST_HELPER_PATTERNS, such as `to_bf16`):

# The path's reason for a cast under a test of another value's dtype.
MATCHED_DTYPE = "cast to match another value's dtype"
# Export and deployment runtimes: code that uses them prepares or runs an exported model.
# (TorchScript is not among them: training code scripts models too.)
_EXPORT_PREFIXES = ("torch.onnx.", "torch.export.", "onnx", "onnxruntime", "tensorrt",
                    "torch_tensorrt", "openvino", "coremltools", "tflite_runtime", "executorch",
                    "tensorflow.lite", "tf.lite", "cv2.dnn", "paddle.inference", "tritonclient")
# Heads of `<head>.dtype` that hold the user's choice (command-line options), not an
# existing model's or tensor's dtype.
_OPTION_HEADS = frozenset({"args", "arguments", "opt", "opts", "options", "flags", "FLAGS", "hparams", "hp",
                           "training_args", "train_args", "cli_args"})
# Words of a method that readies or runs its receiver for inference (`model.generate(...)`,
# `model.make_generation_fast_()`, `model.prepare_for_inference_()`).
_INFERENCE_METHOD_WORDS = frozenset({"generate", "generation", "inference"})
# Calls that train: backward passes, gradients (torch, JAX, TF), optimizer updates, fit().
_TRAINING_CALLS = frozenset({"backward", "zero_grad", "fit", "grad", "value_and_grad", "gradient",
                             "apply_gradients", "apply_updates"})
# Calls that write a model or its state to a file.
_SAVES = frozenset({"save", "save_pretrained", "save_model", "save_file", "save_checkpoint", "push_to_hub"})
_TRAINING_FLAGS = frozenset({"training", "is_training", "is_train", "train_mode", "in_training"})


@dataclasses.dataclass
class ClassFacts:
    evaluated: set[str] = dataclasses.field(default_factory=set)  # receivers put in eval mode or frozen
    trained: set[str] = dataclasses.field(default_factory=set)  # receivers put in train mode
    trains: bool = False  # a method steps an optimizer or calls backward()
    no_grad_entry: bool = False  # its __call__ or forward runs under no_grad / inference_mode



@dataclasses.dataclass
class FileFacts:
    script: bool  # has an `if __name__ == "__main__":` block
    trains: bool  # something in the file trains
    classes: dict[str, ClassFacts]


def _strip_moves(node: ast.AST) -> ast.AST:
    """`model.cuda().eval()`'s receiver `model.cuda()` is `model`."""
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
           and node.func.attr in DEVICE_MOVES):
        node = node.func.value
    return node


def _is_false(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _ast_trains(call: ast.Call) -> bool:
    """A call that trains: backward(), an optimizer step, .train(), fit(), train(...)."""
    name = last_name(call.func)
    if name is None:
        return False
    if name in _TRAINING_CALLS:
        return True
    if name == "train":
        if isinstance(call.func, ast.Attribute):
            return not (call.args and _is_false(call.args[0]))
        return bool(call.args)
    if name == "step" and isinstance(call.func, ast.Attribute):
        owner = last_name(call.func.value) or ""
        return "optim" in owner.lower() or "scaler" in owner.lower()
    return name.startswith("train_") and not (words_of(name) & {"data", "dataset", "loader", "dataloader",
                                                               "split", "test", "args", "config", "sampler"})


def _ast_evaluates(call: ast.Call, options: Options) -> bool:
    """A call that puts its receiver in inference mode: eval(), train(False),
    requires_grad_(False), prepare_for_inference...()"""
    name = last_name(call.func)
    if not isinstance(call.func, ast.Attribute) or name is None:
        return False
    if name == "eval" and not call.args:
        return True
    if name in ("train", "requires_grad_") and call.args and _is_false(call.args[0]):
        return True
    return name != "eval" and (any(fnmatch.fnmatchcase(name.lower(), p) for p in options.inference_functions)
                               or bool(words_of(name) & _INFERENCE_METHOD_WORDS))


def file_facts(tree: ast.Module, text: str, options: Options, path: str = "") -> FileFacts:
    """What the file's classes and scripts train, from its whole ``ast``."""
    index = Index(tree.body)
    classes: dict[str, ClassFacts] = {}
    spans: list[tuple[int, int, ClassFacts]] = []  # (first line, last line, facts) of each class
    for node in index(ast.ClassDef):
        facts = classes.setdefault(node.name, ClassFacts())
        spans.append((node.lineno, node.end_lineno or node.lineno, facts))
        for member in node.body:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name in (
                    "__call__", "forward") and any(_no_grad_decorator(d) for d in member.decorator_list):
                facts.no_grad_entry = True
    spans.sort(key=lambda span: span[0])

    def innermost(line: int) -> ClassFacts | None:
        found = None
        for first, last, facts in spans:
            if first > line:
                break
            if last >= line:
                found = facts  # a later start that still holds the line is nested deeper
        return found

    trains = False
    for node in index(ast.Call):
        func = node.func
        training = _ast_trains(node)
        trains = trains or training
        if not spans or not (training or isinstance(func, ast.Attribute)):
            continue
        if training:
            owner = innermost(node.lineno)
            if owner is not None:
                owner.trains = True
        if isinstance(func, ast.Attribute):
            receiver = dotted(_strip_moves(func.value))
            if receiver is not None and receiver.split(".")[0] == "self":
                owner = innermost(node.lineno)
                if owner is None:
                    continue
                if _ast_evaluates(node, options):
                    owner.evaluated.add(receiver)
                elif func.attr == "train" and not (node.args and _is_false(node.args[0])):
                    owner.trained.add(receiver)
    script = any(_main_guard(node.test) for node in index(ast.If))
    if spans:
        for node in index(ast.Assign):
            # `m = self.model.eval()`: both names are in eval mode.
            if len(node.targets) == 1 and isinstance(node.value, ast.Call) and _ast_evaluates(node.value, options):
                target = dotted(node.targets[0])
                owner = innermost(node.lineno)
                if target is not None and target.startswith("self.") and owner is not None:
                    owner.evaluated.add(target)
    return FileFacts(script, trains, classes)


def _no_grad_decorator(node: ast.AST) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    last = (last_name(target) or "").lower()
    return "no_grad" in last or "inference_mode" in last


def _main_guard(test: ast.AST) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


@dataclasses.dataclass
class FunctionFacts:
    trains: bool = False
    # receiver -> where (in source order) it is put in eval mode or frozen (strength 2) or
    # used for inference (1), and where it is rebound
    evaluated: dict[str, list[tuple[int, int]]] = dataclasses.field(default_factory=dict)
    bound: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    order: dict[int, int] = dataclasses.field(default_factory=dict)  # id(call) -> its place in source order
    trained: set[str] = dataclasses.field(default_factory=set)
    saved: set[str] = dataclasses.field(default_factory=set)  # receivers saved to a file
    no_grad: bool = False  # decorated with no_grad / inference_mode
    exports: bool = False  # uses an export or deployment runtime
    guarded_train: set[int] = dataclasses.field(default_factory=set)  # ids of calls under `if training:`
    guarded_infer: set[int] = dataclasses.field(default_factory=set)  # ids of calls under `with no_grad():`
    # id(call) -> the values whose dtype a test it is under checks (`if x.dtype ...:`)
    guarded_match: dict[int, frozenset[str]] = dataclasses.field(default_factory=dict)


def _cst_strip_moves(node: cst.CSTNode) -> cst.CSTNode:
    while (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
           and node.func.attr.value in DEVICE_MOVES):
        node = node.func.value
    return node


def _cst_false(args: Iterable[cst.Arg]) -> bool:
    first = next(iter(args), None)
    return first is not None and isinstance(first.value, cst.Name) and first.value.value == "False"


def _training_test(test: cst.BaseExpression) -> bool:
    """`if training:`, `if self.training and ...:` (not negated)."""
    if isinstance(test, cst.BooleanOperation):
        return test.operator.__class__.__name__ == "And" and (_training_test(test.left) or _training_test(test.right))
    last = _cst_last(test)
    return last in _TRAINING_FLAGS


class Paths:
    """One file's code paths: whether a cast at a place may run before or during
    training (see the module's docs)."""

    def __init__(self, ctx: FileContext, options: Options) -> None:
        self.ctx = ctx
        self.options = options
        self._file: FileFacts | None = None
        self._functions: dict[int, FunctionFacts] = {}

    @property
    def file(self) -> FileFacts:
        if self._file is None:
            self._file = file_facts(self.ctx.file_tree(), self.ctx.text, self.options, self.ctx.path)
        return self._file

    def function_facts(self, fn: cst.FunctionDef) -> FunctionFacts:
        facts = self._functions.get(id(fn))
        if facts is None:
            facts = self._functions[id(fn)] = self._scan(fn)
        return facts

    def _scan(self, fn: cst.FunctionDef) -> FunctionFacts:
        ctx = self.ctx
        facts = FunctionFacts()
        for decorator in fn.decorators:
            target = decorator.decorator
            target = target.func if isinstance(target, cst.Call) else target
            last = (_cst_last(target) or "").lower()
            if "no_grad" in last or "inference" in last:
                facts.no_grad = True
        # (node, under `if training:`, under `with no_grad():`)
        # (node, the flags of the branches it is in: `if training:`, `with no_grad():`, `if x.dtype ...:`)
        stack: list[tuple[cst.CSTNode, tuple[bool, bool, frozenset[str]]]] = [(fn.body, (False, False, frozenset()))]
        from dtype_lint.core.traversal import child_fields

        place = 0
        while stack:
            node, flags = stack.pop()
            place += 1
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue  # their own scopes
            train, infer, match = flags
            owners = self._dtype_owners(node.test) if isinstance(node, (cst.If, cst.IfExp)) else frozenset()
            if isinstance(node, (cst.If, cst.IfExp)) and (_training_test(node.test) or owners):
                # The true branch runs while training, or casts to match another value's
                # dtype (`m.half() if x.dtype is torch.float16 else m`).
                branch = (True, infer, match) if _training_test(node.test) else (train, infer, match | owners)
                parts = [(node.test, flags), (node.body, branch)]
                if node.orelse is not None:
                    parts.append((node.orelse, flags))
                if isinstance(node, cst.IfExp):  # source order: body, test, orelse
                    parts[0], parts[1] = parts[1], parts[0]
                stack.extend(reversed(parts))
                continue
            if isinstance(node, cst.With) and any(self._no_grad(item.item) for item in node.items):
                stack.append((node.body, (train, True, match)))
                continue
            if isinstance(node, cst.Call):
                facts.order[id(node)] = place
                self._call(node, facts, place)
                if train:
                    facts.guarded_train.add(id(node))
                if infer:
                    facts.guarded_infer.add(id(node))
                if match:
                    facts.guarded_match[id(node)] = match
            elif isinstance(node, (cst.Import, cst.ImportFrom)):
                text = ctx.module.code_for_node(node)
                if any(re.search(rf"\b{re.escape(p)}", text) for p in _EXPORT_PREFIXES if "." not in p):
                    facts.exports = True
            elif isinstance(node, (cst.Assign, cst.For)):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                value = node.value if isinstance(node, cst.Assign) else None
                source = _cst_dotted(_cst_strip_moves(value)) if value is not None else None
                for target in targets:
                    text = _cst_dotted(target)
                    if text is None:
                        continue
                    if isinstance(value, cst.Call) and self._evaluates(value):
                        facts.evaluated.setdefault(text, []).append((place, self._evaluates(value)))
                    elif source != text:  # `model = model.to(device)` keeps the object
                        facts.bound.setdefault(text, []).append(place)
            # Children in source order: pushed last to first.
            children: list[cst.CSTNode] = []
            for field in child_fields(type(node)):
                value = getattr(node, field)
                if isinstance(value, (tuple, list)):
                    children.extend(v for v in value if isinstance(v, cst.CSTNode))
                elif isinstance(value, cst.CSTNode):
                    children.append(value)
            stack.extend((child, flags) for child in reversed(children))
        return facts

    def _dtype_owners(self, test: cst.BaseExpression) -> frozenset[str]:
        """The values whose dtype a test checks (`x.dtype is torch.float16`: x)."""
        from dtype_lint.core.traversal import descendants

        return frozenset(_cst_dotted(n.value) or "?" for n in descendants(test)
                         if isinstance(n, cst.Attribute) and self.matches_existing_dtype(n))

    def _no_grad(self, item: cst.BaseExpression) -> bool:
        target = item.func if isinstance(item, cst.Call) else item
        last = (_cst_last(target) or "").lower()
        return "no_grad" in last or "inference_mode" in last

    def _evaluates(self, call: cst.Call) -> int:
        """2: the call puts its receiver in eval mode or freezes it; 1: it readies or runs
        it for inference (`generate()`, `prepare_for_inference_()`); 0: neither."""
        name = _cst_last(call.func)
        if not isinstance(call.func, cst.Attribute) or name is None:
            return 0
        if name == "eval" and not call.args:
            return 2
        if name in ("train", "requires_grad_") and _cst_false(call.args):
            return 2
        return int(name != "eval" and (any(fnmatch.fnmatchcase(name.lower(), p) for p in self.options.inference_functions)
                                       or bool(words_of(name) & _INFERENCE_METHOD_WORDS)))

    def _call(self, call: cst.Call, facts: FunctionFacts, place: int) -> None:
        func = call.func
        name = _cst_last(func)
        if name is None:
            return
        qualified = self.ctx.resolve(func) or ""
        if any(qualified.startswith(p) for p in _EXPORT_PREFIXES):
            facts.exports = True
        if isinstance(func, cst.Attribute):
            receiver = _cst_dotted(_cst_strip_moves(func.value))
            if self._evaluates(call):
                if receiver:
                    facts.evaluated.setdefault(receiver, []).append((place, self._evaluates(call)))
            elif name == "train" and not _cst_false(call.args):
                facts.trains = True
                if receiver:
                    facts.trained.add(receiver)
        if name in _SAVES and (call.args or isinstance(func, cst.Attribute)):
            target = call.args[0].value if name == "save" and call.args else (
                func.value if isinstance(func, cst.Attribute) else None)
            while isinstance(target, cst.Call) and isinstance(target.func, cst.Attribute):
                target = target.func.value  # `model.half().state_dict()`: the model
            text = _cst_dotted(target) if target is not None else None
            if text:
                facts.saved.add(text)
        if name in _TRAINING_CALLS:
            facts.trains = True
        elif name == "step" and isinstance(func, cst.Attribute):
            owner = (_cst_last(func.value) or "").lower()
            facts.trains = facts.trains or "optim" in owner or "scaler" in owner
        elif name == "train" and isinstance(func, cst.Name) and call.args:
            facts.trains = True
        elif name.startswith("train_") and not words_of(name) & {"data", "dataset", "loader", "dataloader",
                                                                  "split", "test", "args", "config", "sampler"}:
            facts.trains = True

    def path(self, node: cst.CSTNode, receiver: cst.BaseExpression | None = None) -> str | None:
        """Why a cast at ``node`` (of ``receiver``, if it has one) runs only for inference
        or export, or None when it may run before or during training."""
        ctx = self.ctx
        fn = ctx.function
        facts = self.function_facts(fn.node) if fn is not None else None  # type: ignore[arg-type]
        if facts is not None and id(node) in facts.guarded_train:
            return None  # the code says this branch runs while training
        text = _cst_dotted(_cst_strip_moves(receiver)) if receiver is not None else None
        if facts is not None and facts.guarded_match.get(id(node), frozenset()) - {text}:
            return MATCHED_DTYPE
        if facts is not None and id(node) in facts.guarded_infer:
            return "under no_grad/inference_mode"
        names = [s.name.lower() for s in ctx.scopes if isinstance(s.node, cst.FunctionDef)]
        if any(matches_any(name, self.options.inference_functions) for name in names):
            return "in a function named for inference, evaluation or export"
        text = _cst_dotted(_cst_strip_moves(receiver)) if receiver is not None else None
        if facts is not None:
            if text and text not in facts.trained and self._evaluated(facts, text, facts.order.get(id(node))):
                return f"'{text}' is put in eval mode here and never in train mode"
            if text and text in facts.saved and not facts.trains:
                return f"'{text}' is saved to a file here (checkpoint conversion or export)"
            if not facts.trains and (facts.no_grad or facts.exports):
                return "in a function that runs without gradients or uses an export runtime"
        cls = ctx.method_class()
        cf = self.file.classes.get(cls.name) if cls is not None else None
        if cf is not None and not cf.trains:
            if cf.no_grad_entry:
                return f"in {cls.name}, whose __call__/forward runs without gradients"  # type: ignore[union-attr]
            if text and text.split(".")[0] == "self" and text in cf.evaluated and text not in cf.trained:
                return f"'{text}' is put in eval mode by its class and never in train mode"
        if self.file.script and not self.file.trains:
            return "a script in which nothing trains"
        return None

    @staticmethod
    def _evaluated(facts: FunctionFacts, text: str, place: int | None) -> bool:
        """Whether ``text`` is put in eval mode, before or after ``place``, with no
        rebinding of the name in between (then it is the same object). A use for
        inference (`generate()`) counts only where nothing in the function trains; eval
        mode and freezing are about the receiver itself."""
        if place is None:
            return False
        bound = facts.bound.get(text, ())
        return any((strength == 2 or not facts.trains) and not any(min(at, place) < b < max(at, place) for b in bound)
                   for at, strength in facts.evaluated.get(text, ()))

    # -- dtypes ------------------------------------------------------------------------

    def matches_existing_dtype(self, dtype: cst.BaseExpression | None) -> bool:
        """``x.to(other.dtype)``: the dtype of an existing model, tensor or leaf (not a
        command-line option), which keeps what is there rather than choosing a precision."""
        if isinstance(dtype, cst.Name):  # `dtype = self.vae.dtype` ... `.to(dtype)`: F1's reading of a dtype
            return any(isinstance(value, cst.Attribute) and self.matches_existing_dtype(value)
                       for value in FileFlow.of(self.ctx).values(dtype, CAST_BACK))
        if not isinstance(dtype, cst.Attribute) or dtype.attr.value != "dtype":
            return False
        head = dtype.value
        last = _cst_last(head)
        return last not in _OPTION_HEADS

    def requested_dtype(self, dtype: cst.BaseExpression | None) -> bool:
        """A dtype the caller passed in: a parameter of the enclosing function, which does
        not train (a loader or builder applying the dtype its caller asked for, the
        configuration interface)."""
        fn = self.ctx.function
        if not isinstance(dtype, cst.Name) or fn is None or not isinstance(fn.node, cst.FunctionDef):
            return False
        params = fn.node.params
        names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        return dtype.value in names and not self.function_facts(fn.node).trains


def paths(ctx: FileContext, options: Options) -> Paths:
    """The file's :class:`Paths`, made on first use and shared by every rule."""
    return ctx.fact(("paths", options), lambda: Paths(ctx, options))


@dataclasses.dataclass(frozen=True)
class Cast:
    """What the sanitizers read of a cast's site: its receiver, whether it recasts each
    parameter in a loop, which skip applies (``"own"``: the module casts' own test;
    ``"plain"``: test code and casting code; None: none), and whether its path is judged."""

    receiver: cst.BaseExpression | None = None
    each: bool = False
    skip: str | None = "own"
    judged: bool = True


def _not_trained(ctx: FileContext, options: Options, hit: Hit) -> bool:
    """The cast's path runs only for inference, evaluation or export. A loop over the
    parameters that tests each one's dtype recasts those it picks all the same: its
    guard chooses which tensors to recast, not a dtype to match."""
    if not _judged(hit):
        return False
    cast = hit.site.context if isinstance(hit.site.context, Cast) else Cast()
    reason = paths(ctx, options).path(hit.site.node, cast.receiver)
    return reason is not None and not (cast.each and reason == MATCHED_DTYPE)


NOT_TRAINED = Check("a path that runs only for inference, evaluation or export, or a cast that matches another "
                    "value's dtype", _not_trained, file_facts)


# Words of a file's name that say it runs a model for validation, evaluation, inference,
# export or a demo: a cast there is one of those, by convention.
_EVALUATION_FILE_WORDS = frozenset({"val", "valid", "validate", "validator", "validation", "eval", "evaluate",
                                    "evaluator", "evaluation", "predict", "predictor", "prediction", "infer",
                                    "inference", "export", "exporter", "demo", "benchmark", "serve", "serving"})


def _judged(hit: Hit) -> bool:
    """Whether the hit's path is judged at all (a parameter replaced by a recast copy of
    itself stops training wherever it is)."""
    return not (isinstance(hit.site.context, Cast) and not hit.site.context.judged)


def _evaluation_file(ctx: FileContext, options: Options, hit: Hit) -> bool:
    return _judged(hit) and bool(words_of(ctx.module_stem) & _EVALUATION_FILE_WORDS)


def training_seen(ctx: FileContext, options: Options) -> bool:
    """Whether the function being read, its class or the file trains something (an
    optimizer step, backward(), .train(), fit())."""
    found = paths(ctx, options)
    fn = ctx.function
    if fn is not None and isinstance(fn.node, cst.FunctionDef) and found.function_facts(fn.node).trains:
        return True
    cls = ctx.method_class()
    facts = found.file.classes.get(cls.name) if cls is not None else None
    return found.file.trains or (facts is not None and facts.trains)


def _training_unseen(ctx: FileContext, options: Options, hit: Hit) -> bool:
    """Nothing in the function, its class or the file trains: that the cast reaches a
    trained model is assumed, not seen."""
    return _judged(hit) and not training_seen(ctx, options)


EVALUATION_FILE = Check("a file named for validation, evaluation, inference or export (by convention)",
                        _evaluation_file, demotes="low")
TRAINING_UNSEEN = Check("a training use assumed from context: nothing in the function, its class or the file trains",
                        _training_unseen, file_facts, demotes="medium")
