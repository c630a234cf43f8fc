"""DTL303: a whole module cast with .half()/.bfloat16()/.double()/.float()/.to(dtype)."""

from __future__ import annotations

import libcst as cst

from dtype_lint.catalog import RuleDoc
from dtype_lint.rules.base import Invalid, Rule
from dtype_lint.rules.patterns import cast_target, in_cast_helper, matches_any, module_kind


class ModuleRecast(Rule):
    doc = RuleDoc(
        code="DTL303",
        name="module-recast",
        summary="Whole module recast instead of configured",
        what_it_does="""
            Checks for `.half()`, `.bfloat16()`, `.double()`, `.float()`, `.to(<dtype>)`,
            `.to(dtype=...)` and `.type(<dtype>)` on a receiver known to be a module: one
            built by a `torch.nn` constructor or a class deriving from `nn.Module`, `self`
            inside a module, a parameter annotated as a module, or a name configured in
            `module-names` (`model`, `net`, `*_model` by default); and calls of helpers that
            cast a whole model (`convert_weights_to_lp`, `to_bf16`, ... from
            `cast-helpers`).
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
            """,
        known_limits="""
            A module returned by a function or stored in a container is only known by its
            name (the mypy plugin knows it by its type). Casts for inference or export are
            still reported: suppress them with `# noqa: DTL303`. The bodies of explicit
            casting helpers (`half`, `to_fp16`, `convert_*`, `*cast*`) are not reported.
            """,
    )
    message = (
        "casting the whole module ({why}) keeps weights, buffers and optimizer state in "
        "that dtype and bypasses its configuration; use autocast/a precision policy or the "
        "module's dtype arguments"
    )
    triggers = (".half(", ".bfloat16(", ".double(", ".float(", ".to(", ".type(", "convert", "to_fp16", "to_bf16", "cast")
    options_used = ("module-names", "module-bases", "cast-helpers")
    valid = (
        "model = nn.Linear(2, 2)\nmodel.to('cuda')",
        "def f(x: torch.Tensor):\n    return x.half()",
        "import torch\nmodel = nn.Linear(2, 2)\nmodel.to(torch.device('cuda'))",
        "loss = criterion(logits.float(), y)",
        "import torch.nn as nn\nclass M(nn.Module):\n    def half(self):\n        return self._apply(lambda t: t.half())",
    )
    invalid = (
        Invalid("import torch.nn as nn\nlayer = nn.Linear(2, 2)\nlayer.half()"),
        Invalid("import torch\nmodel = build()\nmodel.to(torch.bfloat16)"),
        Invalid("import torch\nmodel = build()\nmodel.to(device, dtype=torch.float16)"),
        Invalid("import torch.nn as nn\ndef prep(m: nn.Module):\n    return m.double()"),
        Invalid("import torch.nn as nn\nclass M(nn.Module):\n    def setup_fp16(self):\n        self.half()"),
        Invalid("convert_weights_to_lp(model, dtype=torch.bfloat16)"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if in_cast_helper(self.ctx):
            return
        receiver = cast_target(node, self.ctx)
        if receiver is not None:
            why = module_kind(receiver, self.ctx, self.options)
            if why:
                self.report(node, self.message.format(why=why))
            return
        qualified = self.ctx.resolve(node.func)
        if qualified and matches_any(qualified.rsplit(".", 1)[-1], self.options.cast_helpers):
            self.report(node, self.message.format(why=f"{qualified.rsplit('.', 1)[-1]}() casts it whole"))
