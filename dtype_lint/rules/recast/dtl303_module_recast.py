"""DTL303: a whole module cast with .half()/.bfloat16()/.double()/.float()/.to(dtype)."""

from __future__ import annotations

import ast
import bisect
import re
from typing import Callable

from dtype_lint.core.deferred import cst
from dtype_lint.core.traversal import descendants
from dtype_lint.core.model.finder import standard_library
from dtype_lint.core.model.summary import FunctionSummary, has_star_import, module_statements, rebinding
from dtype_lint.core.roles import DEVICE_MOVES, MATCHED_DTYPE, factory_name, key_of, models_path, roles
from dtype_lint.core.shapes import (Index, Names, Prefilter, Syntax, cast_call, device_like, literals,
                                     module_type, named_module, qualified_names)
from dtype_lint.frameworks.bases import unread
from dtype_lint.frameworks.casts import CAST_METHODS, TYPE_CAST_METHODS
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.core.dtypes import LOW_PRECISION, dtype_name
from dtype_lint.rules.options import Options
from dtype_lint.rules.patterns import argument, casting_helper, cast_dtype_name, cast_target, matches_any, method_name, names_dtype

_PARAMETER = frozenset({"torch.nn.Parameter", "nn.Parameter", "Parameter", "torch.nn.parameter.Parameter"})


class ModuleRecast(Rule):
    doc = RuleDoc(
        code="DTL303",
        name="module-recast",
        summary="Whole module recast instead of configured",
        what_it_does="""
            Checks for `.half()`, `.bfloat16()`, `.double()`, `.float()`, `.to(<dtype>)`,
            `.to(dtype=...)` and `.type(<dtype>)` on a receiver the file shows to be a module
            (`dtype_lint.core.roles`): one built by a `torch.nn` constructor or a class
            deriving from `nn.Module` or imported from a package of models or layers
            (`from mypkg.models import ResNet`), `self` inside a module, a parameter
            annotated as a module, a value bound from a factory or loader named for a model
            (`build_model(...)`, `from_pretrained(...)`) or from a copy of a module
            (`deepcopy(model)`, EMA copies), a name or attribute on which the file calls
            what only modules have (`.parameters()`, `.state_dict()`, `.train()`,
            `.eval()`... : loss and criterion modules are known so), or a name configured in
            `module-names` that the file does not show to hold tensors or a batch
            (`model_inputs`, `model_output`, `t_model.expand(n)`); a cast whose result is
            stored under such a name (`model = build(cfg).to(dtype=dtype)`); calls of helpers
            that cast a whole model (`convert_weights_to_lp`, `to_bf16`, ... from
            `cast-helpers`); a model handed to a function that casts that parameter, in
            this file or another, itself or through the helpers it passes it on to, under
            its own name or one the file binds it to (`shrink = precision.lower_each`; the
            project model's summaries; the finding's path shows each call and the cast);
            a module recast one parameter or buffer at a time (`for p in
            model.parameters(): p.data = p.data.half()`, over any iterable, directly or
            through a name or a helper of the file that returns the cast; to any dtype
            not taken from the tensors themselves, float32 and a caller's dtype
            included: such a loop bypasses the model's configuration either way); and a
            parameter replaced by a
            recast copy of itself (`self.emb = nn.Parameter(self.emb.half())`).

            Only casts that may run before or during training are reported. A branch taken
            when a `training` flag holds is a training path. Not reported: casts to
            float32 (they restore the default), to another model's or tensor's dtype
            (`.to(unet.dtype)`, `m.half() if x.dtype is torch.float16 else m`), to a dtype
            the caller passed to a function that does not train (a loader applying its
            `torch_dtype` argument); casts on an inference or export path: in a function
            named so (`inference-functions`), under `no_grad`/`inference_mode`, in a
            function that trains nothing and puts the same receiver in eval mode, freezes it
            or generates with it (`.eval()`, `.requires_grad_(False)`,
            `prepare_for_inference_()`, `.generate()`), with no rebinding between, or saves it
            to a file (checkpoint conversion); that uses an export runtime (ONNX, TensorRT, OpenVINO,
            Core ML, TF Lite, ExecuTorch) and does not train; in a class that puts the
            receiver in eval mode, or whose `__call__`/`forward` runs without gradients; in
            a script (`__main__`) in which nothing trains. Nor in test code, in the bodies
            of explicit casting helpers (`to_fp16`, `cast_*`, `*_cast`, `convert_*`, or a
            function named for a precision, `model2half`, `wrap_fp16_model`, where it casts
            the value it is handed: those are reported at their callers), or in
            classes whose job is casting (precision plugins and policies, casting hooks).
            """,
        why_bad="""
            `model.half()` casts every parameter and buffer in place: training then keeps
            its master weights in half precision (small updates round to zero), the
            optimizer state follows, normalisation layers lose range, and nothing about the
            model's configuration says so. Mixed precision belongs in a policy:
            `torch.autocast`, Lightning's `precision="bf16-mixed"`, or the modules' own
            dtype arguments.
            """,
        example="""
            model = Transformer(cfg).cuda().half()
            """,
        use_instead="""
            model = Transformer(cfg).cuda()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(batch)
            """,
        options="""
            - `module-names`: receiver names taken to be modules when nothing else is known.
            - `module-bases`: extra base classes that make a class a module.
            - `cast-helpers`: functions that cast a whole model when called.
            - `inference-functions`: functions that only run a model for inference or
              evaluation.
            - `param-dtype-names`: a helper called with a dtype of one of these names
              applies a configured storage dtype and is not reported.
            """,
        known_limits="""
            A module returned by a function of another file or stored in a container is only
            known by its name or by what this file calls on it (the mypy plugin knows it by
            its type). Receivers are keyed by their last name across the file, so a short
            name used both for a module and for something else (`m`, `x`) can be taken for
            either; data words in the name (`x`, `inputs`, `output`, `batch`) win. Code paths
            are read within one file: a cast in a library function is reported unless that
            function, its class or its script shows inference, even if every caller only
            evaluates; a loader that returns the model in eval mode is taken for inference.
            A helper call is taken to apply a configured storage dtype when its dtype
            argument is named like one (`param-dtype-names`, such as `mu_dtype`). The bodies
            of explicit casting helpers are not reported, except where they replace a
            parameter with a recast copy (that also detaches it from its optimizer). A
            frozen submodule's cast is silent only where the same function freezes it.
            """,
    )
    message = (
        "casting the whole module ({why}) keeps weights, buffers and optimizer state in "
        "that dtype and bypasses its configuration; use autocast/a precision policy or the "
        "module's dtype arguments"
    )
    options_used = ("module-names", "module-bases", "cast-helpers", "inference-functions", "param-dtype-names")
    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        helpers = literals(options.cast_helpers)
        if helpers is None:
            return None
        return Prefilter(
            lambda t, lc, u: any(helper in t for helper in helpers) or (
                cast_call(t) and (u is None or _module_cast(u.index, u.names) or (
                    _PARAMETER_LOOP.search(t) and _data_in_loop(u.index)))) or (
                u is None or _helper_call(u)),
            import_words=("convert", "cast", "to_fp16", "to_bf16", *("float", "half", "double", "bfloat16", "dtype")),
            configured=tuple(helpers),
            # Receivers, arguments and callees, never dtype spellings: `cast_call` reads the
            # text with aliases written out.
            sees_aliases=True,
        )

    valid = (
        "def prepare(model_inputs, dtype):\n    return model_inputs.to(dtype)",
        "import torch\ndef match(controlnet, unet):\n    controlnet.to(unet.dtype)",
        "import torch\nclass DoublePrecisionPlugin:\n    def connect(self, model):\n        return model.double()",
        "import torch\nif __name__ == '__main__':\n    model = load()\n    model.half()\n    print(model(x))",
        "import torch\ndef test_half():\n    model = build()\n    model.half()",
        "model = nn.Linear(2, 2)\nmodel.to('cuda')",
        "def f(x: torch.Tensor):\n    return x.half()",
        "import torch\nmodel = nn.Linear(2, 2)\nmodel.to(torch.device('cuda'))",
        "loss = criterion(logits.float(), y)",
        "import torch.nn as nn\nclass M(nn.Module):\n    def half(self):\n        return self._apply(lambda t: t.half())",
        "def load(path):\n    model = build()\n    model.float()\n    return model",
        "import torch\ndef run_inference(model, x):\n    model.half()\n    return model(x)",
        "import torch\ndef serve(model):\n    model.to(dtype=torch.float16).eval()",
        "import torch\ndef load_for_scoring(model, sd):\n    model.half()\n    model.load_state_dict(sd)\n"
        "    return model.eval()",
        "def update(mu, mu_dtype):\n    return cast_tree(mu, mu_dtype)",
        "import torch.nn as nn\ndef resize(old, n):\n    new = nn.Embedding(n, 4)\n"
        "    new.to(old.weight.device, dtype=old.weight.dtype)\n    return new",
        "import torch\nclass LossModule(nn.Module):\n    def half(self):\n        return self.to(torch.float16)",
        "import torch\ndef cast_model(model, dtype):\n    return model.to(dtype=dtype)\n"
        "def fit(model):\n    model = cast_model(model, torch.float32)\n    model.train()",
    )
    invalid = (
        Invalid("class Runner:\n    def __init__(self, crit):\n        self.crit = crit.half()\n"
                "    def fit(self):\n        self.crit.train()"),
        Invalid("import torch\n@torch.no_grad()\ndef validate(model=None):\n    training = model is not None\n"
                "    if training:\n        model.half()\n    model.eval()"),
        Invalid("import torch.nn as nn\nlayer = nn.Linear(2, 2)\nlayer.half()"),
        Invalid("import torch\nmodel = build()\nmodel.to(torch.bfloat16)"),
        Invalid("import torch\nmodel = build()\nmodel.to(device, dtype=torch.float16)"),
        Invalid("import torch.nn as nn\ndef prep(m: nn.Module):\n    return m.double()"),
        Invalid("import torch.nn as nn\nclass M(nn.Module):\n    def setup_fp16(self):\n        self.half()"),
        Invalid("convert_weights_to_lp(model, dtype=torch.bfloat16)"),
        Invalid("def train(args):\n    model = Net(args).to(dtype=dtype)"),
        Invalid("import torch\nclass Enc(nn.Module):\n    def cast_codebook(self):\n"
                "        self.inner.codebook = torch.nn.Parameter(self.inner.codebook.half())"),
        Invalid("import torch\ndef fit(model):\n    model.eval()\n    model.half()\n    model.train()"),
        Invalid("import torch\ndef fit(model):\n    for p in model.parameters():\n"
                "        p.data = p.data.half()\n    model.train()"),
        Invalid("import torch\ndef model_to_half(model):\n    return model.half()\n"
                "def fit(model):\n    model = model_to_half(model)\n    model.train()"),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.value, cst.Call):
            return
        target, value = node.targets[0].target, node.value
        self._parameter_replaced(target, value)
        receiver = cast_target(value, self.ctx)
        if receiver is None:
            return
        found = roles(self.ctx, self.options)
        if found.module_reason(receiver) or found.tensor(receiver):
            return  # a known module's cast is reported by visit_Call; a tensor's is not one
        why = found.module_reason(target)
        if why and self._recasts(value) and not self._skipped(receiver):
            self._cast(value, why, receiver)

    def visit_Call(self, node: cst.Call) -> None:
        receiver = cast_target(node, self.ctx)
        if receiver is not None:
            found = roles(self.ctx, self.options)
            why = found.module_reason(receiver)
            if why and self._recasts(node) and not self._skipped(receiver):
                self._cast(node, why, receiver)
            return
        qualified = self.ctx.resolve(node.func)
        if qualified and matches_any(qualified.rsplit(".", 1)[-1], self.options.cast_helpers):
            found = roles(self.ctx, self.options)
            if self._storage_dtype(node) or found.skipped():
                return
            model = argument(node, 0, None)
            self._cast(node, f"{qualified.rsplit('.', 1)[-1]}() casts it whole", model)
        elif qualified and self.ctx.view is not None:
            self._helper_casts(node, qualified)

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
            if cast is None or not self._recasts(cast, requested=False):
                continue
            if cast_dtype_name(cast, self.ctx) == "float32" and _selected_by_name(node, stmt):
                continue  # named modules kept in float32 (`_keep_in_fp32_modules`): a policy
            if not self._skipped(owner):
                self._cast(cast, f"every parameter of `{self._code(owner)}` recast in a loop", owner, each=True)
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
        found = roles(self.ctx, self.options)
        for position, arg in enumerate(call.args):
            if arg.star or not found.module_reason(arg.value) or self._skipped(arg.value, by_name=False):
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
            if found.path(call, arg.value) is None:
                self.report(call, self.message.format(why=why), flow=path.steps)
            return

    def _helper_dtype_lowers(self, call: cst.Call, helper: FunctionSummary, dtype_param: str) -> bool:
        """A helper's cast that takes its dtype from a parameter lowers precision only
        where the call passes a low-precision dtype there."""
        if not dtype_param:
            return True
        position = helper.params.index(dtype_param) if dtype_param in helper.params else None
        value = argument(call, position, dtype_param)
        return value is not None and dtype_name(value, self.ctx) in LOW_PRECISION

    def _skipped(self, receiver: cst.BaseExpression | None, by_name: bool = True) -> str | None:
        """Why a cast of ``receiver`` here is not reported (roles.skipped). A casting
        helper's body is the casting API only for the module it is handed: a cast of its
        own parameter is reported where the helper is called (through the project
        model's summaries), a cast of anything else (``self.module``, ``learn.model``)
        here. A function named for a precision (``model2half``, ``wrap_fp16_model``)
        that casts its parameter is such a helper too (``by_name``: not for the
        argument of a call, which is the caller's own cast through a helper)."""
        reason = roles(self.ctx, self.options).skipped()
        function = self.ctx.function
        if function is not None and self.ctx.method_class() is not None and function.name in _CAST_METHOD_NAMES:
            return "the definition of a cast method"  # `def half(self): return self.to(...)`
        own = self._own_parameter(receiver)
        if reason == "the body of a casting helper":
            return reason if own else None
        if reason is None and own and by_name and _PRECISION_NAME.search(self.ctx.function.name.lower()):
            return "the body of a casting helper"
        return reason

    def _own_parameter(self, receiver: cst.BaseExpression | None) -> bool:
        """Whether ``receiver`` is what the function was handed: one of its parameters,
        or the variable of a loop over one (``for m in models``)."""
        function = self.ctx.function
        if not isinstance(receiver, cst.Name) or function is None or receiver.value in ("self", "cls"):
            return False
        params = function.node.params
        own = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)} - {"self", "cls"}
        if receiver.value in own:
            return True
        return any(isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) and loop.target.value == receiver.value
                   and isinstance(loop.iter, cst.Name) and loop.iter.value in own for loop in descendants(function.node))

    def _recasts(self, call: cst.Call, requested: bool = True) -> bool:
        """Not a cast to float32, which restores the default precision, nor one to another
        model's or tensor's dtype (`.to(unet.dtype)`, `dtype=old.weight.dtype`), which
        keeps what is there, nor (``requested``) to a dtype the caller asked a loader for.
        A parameter-by-parameter loop (not ``requested``) is a hand recast to float32 too:
        it changes the precision the model was loaded in, one tensor at a time."""
        if requested and cast_dtype_name(call, self.ctx) == "float32":
            return False
        dtype = argument(call, 0, "dtype")
        if method_name(call) == "to" and (dtype is None or not names_dtype(dtype, self.ctx)):
            dtype = argument(call, 1, None) or argument(call, None, "dtype")
        found = roles(self.ctx, self.options)
        return not (found.matches_existing_dtype(dtype) or (requested and found.requested_dtype(dtype)))

    def _storage_dtype(self, call: cst.Call) -> bool:
        """A helper applying a configured storage dtype (`cast_tree(mu, mu_dtype)`): the
        optimizer state or parameters are kept in the dtype the user chose for them."""
        return any(
            isinstance(arg.value, (cst.Name, cst.Attribute))
            and self._code(arg.value).rsplit(".", 1)[-1] in self.options.param_dtype_names
            for arg in call.args
        )

    def _cast(self, node: cst.Call, why: str, receiver: cst.BaseExpression | None, each: bool = False) -> None:
        """Report unless the cast's path says it does not reach training. A loop over the
        parameters (``each``) that tests each one's dtype recasts those it picks all the
        same: its guard chooses which tensors to recast, not a dtype to match."""
        reason = roles(self.ctx, self.options).path(node, receiver)
        if reason is None or (each and reason == MATCHED_DTYPE):
            self.report(node, self.message.format(why=why))

    def _parameter_replaced(self, target: cst.BaseExpression, value: cst.Call) -> None:
        """``p = nn.Parameter(p.half())``: a trained parameter swapped for a recast copy.

        Reported even inside casting helpers: the new Parameter is not the one the
        optimizer holds, so it stops training as well as losing precision.
        """
        if self.ctx.resolve(value.func) not in _PARAMETER or not value.args:
            return
        inner = value.args[0].value
        if not isinstance(inner, cst.Call) or not self._recasts(inner):
            return
        receiver = cast_target(inner, self.ctx)
        if receiver is not None and self._code(receiver) == self._code(target):
            self.report(value, self.message.format(why="a parameter replaced by a recast copy of itself"))

    def _code(self, node: cst.CSTNode) -> str:
        return self.ctx.module.code_for_node(node)


_CAST_METHOD_NAMES = CAST_METHODS | TYPE_CAST_METHODS
# A function named for the precision it casts to: `model2half`, `wrap_fp16_model`.
_PRECISION_NAME = re.compile(r"half|fp16|bf16|float16|bfloat16")
_MEMBERS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers"})
# `p.data = ...`: what a loop that recasts parameters one at a time does.
_PARAMETER_LOOP = re.compile(r"\.\s*data\s*=(?!=)")


def _selected_by_name(loop: cst.For, stmt: cst.CSTNode) -> bool:
    """Whether the statement runs under a test of the loop's name variable (``for name,
    p in m.named_parameters(): if name in keep: ...``): chosen modules, by name."""
    if not (isinstance(loop.target, cst.Tuple) and loop.target.elements
            and isinstance(loop.target.elements[0].value, cst.Name)):
        return False
    name = loop.target.elements[0].value.value
    return any(isinstance(branch, cst.If) and stmt in set(descendants(branch.body))
               and any(isinstance(n, cst.Name) and n.value == name for n in descendants(branch.test))
               for branch in descendants(loop.body))


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


# The rule's shape, checked on CPython's ast by the prefilter (see its Prefilter).
def _data_in_loop(index: Index) -> bool:
    """DTL303: a loop that sets its variable's ``.data`` (visit_For's shape)."""
    for loop in index(ast.For, ast.AsyncFor):
        names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        if any(isinstance(t, ast.Attribute) and t.attr == "data" and isinstance(t.value, ast.Name)
               and t.value.id in names for node in ast.walk(loop) if isinstance(node, ast.Assign)
               for t in node.targets):
            return True
    return False


def _helper_call(u: Syntax) -> bool:
    """DTL303: a call that hands what may be a module to a function that casts that
    parameter (the project model's summaries of this file and the files it imports).
    Only calls of functions (by name, or through an import: ``utils.cast(m)``; not the
    methods of values) are asked about, and only for the arguments that may be modules."""
    file_names = u.file_names()
    calls = u.file_memo.get("helper calls")
    if calls is None:
        calls = u.file_memo["helper calls"] = _helper_calls(u.file_text, u.file_tree, file_names)
    # Text first: the lines of the file's calls whose head is an import of something
    # the model reads (not a framework it leaves unread, not the standard library) or a
    # function of the file, found once per file. Most units hold none, and need no
    # index. (A class's constructor is no casting helper the model follows: `CapWords`
    # names are left out.)
    first = min(n.lineno for node in u.nodes for n in (node, *getattr(node, "decorator_list", ())))
    last = max(node.end_lineno for node in u.nodes)
    at = bisect.bisect_left(calls, (first, ""))
    heads = {head for line, head in calls[at:bisect.bisect_right(calls, (last, "\uffff"))]}
    if not heads:
        return False
    names: Names | None = None
    for call in u.index(ast.Call):
        root = _ast_root(call.func)
        last = call.func.attr if isinstance(call.func, ast.Attribute) else root.id if isinstance(root, ast.Name) else ""
        if not isinstance(root, ast.Name) or last[:1].isupper() or root.id not in heads or (
                root.id not in file_names.aliases and not isinstance(call.func, ast.Name)):
            continue
        names = names or u.names()
        slots = [i for i, arg in enumerate(call.args) if not isinstance(arg, ast.Starred)
                 and _module_argument(arg, names, u.memo)]
        slots += [k.arg for k in call.keywords if k.arg and _module_argument(k.value, names, u.memo)]
        if slots and any(names.casting_function(q, slot) for q in qualified_names(call.func, names) for slot in slots):
            return True
    return False


def _helper_calls(text: str, tree: ast.Module | None, names: Names) -> list[tuple[int, str]]:
    """(line, head) of each call in ``text`` whose head may name a function the project
    model reads (an import of a module it reads, or a function the file defines at its
    top level or binds there to another name, which the model summarises; with a star
    import, any function the file defines, whose name a star-imported one may share),
    sorted. Each head is looked for as a literal: far faster than a regex for every call."""
    if tree is None:
        defined = set(_DEFINED.findall(text)) | set(_REBOUND.findall(text))
    else:
        statements = list(module_statements(tree.body))
        defined = {s.name for s in statements if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))} | {
            bound[0] for s in statements if (bound := rebinding(s)) is not None}
        if has_star_import(text):
            defined |= set(_DEFINED.findall(text))
    heads = defined | {head for head, qualified in names.aliases.items()
                       if any(not unread(q) and not standard_library(q) for q in qualified)}
    found: list[tuple[int, str]] = []  # (offset, head)
    for head in heads:
        position = text.find(head)
        while position >= 0:
            end = position + len(head)
            tail = _CALL_TAIL.match(text, end)
            if tail and (position == 0 or not (text[position - 1].isalnum() or text[position - 1] in "._")) and not (
                    text.endswith(("def ", "class "), 0, position)) and not (head + tail.group(1)).rsplit(
                    ".", 1)[-1][:1].isupper():
                found.append((position, head))
            position = text.find(head, end)
    found.sort()
    lines, line, offset = [], 1, 0
    for position, head in found:
        line += text.count("\n", offset, position)
        offset = position
        lines.append((line, head))
    return lines


def _module_argument(arg: ast.AST, names: Names, memo: dict) -> bool:
    """_may_be_module of a call's argument; for a name, answered once per unit (the same
    names are handed to many calls)."""
    if not isinstance(arg, ast.Name):
        return _may_be_module(arg, names, 0)
    key = ("may be a module", arg.id)
    if key not in memo:
        memo[key] = _may_be_module(arg, names, 0)
    return memo[key]


def _ast_root(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


# What follows a call's head: the rest of its dotted name, and an opening parenthesis.
_CALL_TAIL = re.compile(r"((?:\.[A-Za-z_]\w*)*)\s*\(")
# A function the file defines (at any depth; the model summarises its top-level ones).
_DEFINED = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)", re.MULTILINE)
# A name bound to a dotted name (`shrink = precision.lower_each`), at any depth.
_REBOUND = re.compile(r"^[ \t]*(\w+)[ \t]*=[ \t]*[A-Za-z_][\w.]*[ \t]*(?:#.*)?$", re.MULTILINE)


def _module_cast(index: Index, names: Callable[[], Names]) -> bool:
    """DTL303: a cast (``.half()``, ``.to(...)``...) whose receiver may be a module, a cast
    stored under a module's name, or a parameter replaced by a recast copy; ``names``
    gives the imports, classes and bindings the unit sees (asked only when it casts)."""
    receivers = [receiver for call in index(ast.Call) if (receiver := _cast_receiver(call)) is not None]
    if not receivers:
        return False
    known = names()
    if any(_may_be_module(receiver, known, 0) for receiver in receivers):
        return True
    for node in index(ast.Assign):
        value = node.value
        if len(node.targets) != 1 or not isinstance(value, ast.Call):
            continue
        if _cast_receiver(value) is not None and _may_be_module(node.targets[0], known, 0):
            return True
        # LibCST's first argument may be a keyword one (`Parameter(data=w.half())`).
        first = next(iter([*value.args, *(k.value for k in value.keywords)]), None)
        if _parameter(value.func, known) and isinstance(first, ast.Call) and _cast_receiver(first) is not None:
            return True
    return False


def _may_be_module(expr: ast.AST, names: Names, depth: int, seen: frozenset[str] = frozenset()) -> bool:
    """Whether core.roles.Roles.module_reason may find ``expr`` to be a module: what
    shapes.may_be_module accepts, plus copies, factories, device moves and receivers the
    file uses as modules (``names.module_keys()``). Each step here (a binding, a copy, a
    device move) is one step of module_reason, which gives up past depth 4; so does this.
    ``seen``: the names whose bindings are being followed; a name met again
    (``x = x.to(device)``) adds nothing that its other bindings do not."""
    if depth > 4:
        return False
    if isinstance(expr, ast.Call):
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if module_type(func, names) or factory_name(name) or _from_models(func, names):
            return True
        if name in ("deepcopy", "copy") and expr.args:
            return _may_be_module(expr.args[0], names, depth + 1, seen)
        return isinstance(func, ast.Attribute) and name in DEVICE_MOVES and _may_be_module(
            func.value, names, depth + 1, seen)
    if isinstance(expr, ast.Name):
        if expr.id == "self" or named_module(expr.id, names) or key_of(expr.id) in names.module_keys():
            return True
        if expr.id in seen:
            return False
        seen = seen | {expr.id}
        return any(
            (isinstance(value, (ast.Name, ast.Attribute)) and module_type(value, names))
            or _may_be_module(value, names, depth + 1, seen)
            for value in names.bindings.get(expr.id, ())
        )
    if isinstance(expr, ast.Attribute):
        return key_of(expr.attr) in names.module_keys() or (
            isinstance(expr.value, ast.Name) and expr.value.id == "self" and named_module(expr.attr, names))
    return False


def _from_models(func: ast.AST, names: Names) -> bool:
    """Whether a callee may resolve to one from a package of models (core.roles.models_path)."""
    return any(models_path(qualified) for qualified in qualified_names(func, names))


def _parameter(func: ast.AST, names: Names) -> bool:
    """Whether a callee may be torch's ``Parameter`` (under an alias too)."""
    if isinstance(func, ast.Attribute):
        return func.attr == "Parameter"
    return isinstance(func, ast.Name) and any(
        q.rsplit(".", 1)[-1] == "Parameter" for q in names.aliases.get(func.id, set()) | {func.id})


def _cast_receiver(call: ast.Call) -> ast.AST | None:
    """The receiver of what may be a cast (rules.patterns.cast_target, with its dtype test
    reduced to this: a ``.to`` whose arguments are all devices moves, it does not cast)."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in CAST_METHODS and not call.args and not call.keywords:
        return func.value
    if func.attr in TYPE_CAST_METHODS and (call.args or call.keywords):
        if func.attr == "to":
            # What cast_target reads as the dtype: `dtype=`, else the first positional
            # argument, else the second.
            candidates = [*(k.value for k in call.keywords if k.arg == "dtype"), *call.args[:2]]
            if all(device_like(arg) for arg in candidates):
                return None
        return func.value
    return None
