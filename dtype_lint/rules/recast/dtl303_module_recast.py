"""DTL303: a whole module cast with .half()/.bfloat16()/.double()/.float()/.to(dtype)."""

from __future__ import annotations

from dtype_lint.concepts import module_casts, trained
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


class ModuleRecast(Rule):
    doc = RuleDoc(
        code="DTL303",
        name="module-recast",
        summary="Whole module recast instead of configured",
        what_it_does="""
            Checks for `.half()`, `.bfloat16()`, `.double()`, `.float()`, `.to(<dtype>)`,
            `.to(dtype=...)` and `.type(<dtype>)` on a receiver the file shows to be a module
            (`dtype_lint.concepts.parameter_trees`): one built by a `torch.nn` constructor or a class
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
        confidence="""
            `high` where the receiver is seen to be a module (constructed from one, `self`
            inside one) and its training is seen or not ruled out; `medium` where the
            receiver is taken as a model by a convention (a `models` path, a factory, a
            name in `module-names`, a casting helper known by its name) or a training use
            is assumed from context; `low` for a copy of a module (EMA, `deepcopy`), a loop
            that upcasts, casts only frozen parameters or keeps each original to restore,
            a module that casts itself to another value's dtype (an adapter matching its
            base layer), and a file named for evaluation, inference or export.
            """,
        precision="high",
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
    finds = Finds(
        at=(module_casts.ModuleCasts, module_casts.ParameterLoops, module_casts.CastingHelperCalls),
        unless=(module_casts.SKIPPED, trained.NOT_TRAINED, trained.EVALUATION_FILE, trained.TRAINING_UNSEEN),
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
