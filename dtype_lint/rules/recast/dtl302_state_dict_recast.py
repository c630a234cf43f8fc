"""DTL302: a dict comprehension that casts every tensor of a state dict or parameter dict."""

from __future__ import annotations

from dtype_lint.concepts import casting_helpers, state_dicts, test_code, trained
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


class StateDictRecast(Rule):
    doc = RuleDoc(
        code="DTL302",
        name="state-dict-recast",
        summary="State dict recast tensor by tensor",
        what_it_does="""
            Checks dict comprehensions over `.items()` whose value casts every tensor:
            `{k: v.half() for k, v in model.state_dict().items()}`,
            `{k: v.to(torch.bfloat16) for k, v in params.items()}`, when the dict holds a
            model's parameters or state (`dtype_lint.concepts.parameter_trees`): a `state_dict()`, a
            checkpoint loaded from a file, or a name that says so (`params`, `weights`,
            `state_dict`, `sd`, `checkpoint`, `model`); not a cache of activations or
            features. Test code, casting helpers and inference or export paths are not
            reported.
            """,
        why_bad="""
            Casting every entry of a state dict recasts buffers and integer-like state
            too (BatchNorm's running statistics, position ids stored as floats), and
            loading it back with `load_state_dict` silently casts the values to the
            module's dtype again, so the low precision is lost or, worse, applied to a
            model that then trains in it. Set the module's dtype through its interface
            (`model.to(dtype)` once, a policy, or `torch.autocast`).
            """,
        example="""
            sd = {k: v.half() for k, v in model.state_dict().items()}
            """,
        use_instead="""
            with torch.autocast("cuda", dtype=torch.float16):
                out = model(batch)
            """,
        confidence="""
            `high` where the recast state dict is seen to be trained; `medium` where a
            training use is assumed from context; `low` in a file named for evaluation,
            inference or export.
            """,
        known_limits="""
            Loops that assign entry by entry (`for k in sd: sd[k] = sd[k].half()`) are
            not seen. Casts to float32 (`v.float()`) restore full precision and are not
            reported. Casts inside explicit casting or conversion helpers (names with
            `cast`, `convert`, `to_fp16`, ...) are not reported. A dict of parameters whose
            name does not say so (`{k: v.half() for k, v in d.items()}`) is not seen.
            """,
    )
    message = (
        "casting every entry of a state dict recasts buffers too and bypasses the module's "
        "dtype; configure the module's dtype or use autocast/a policy"
    )
    finds = Finds(
        at=(state_dicts.StateDictCasts,),
        unless=(test_code.TEST_CODE, casting_helpers.CASTING_CODE, trained.NOT_TRAINED, trained.EVALUATION_FILE,
                trained.TRAINING_UNSEEN),
    )

    valid = (
        "import torch\ncache = {k: f.to(torch.float16) for k, f in new_factors.items()}",
        "sd = {k: v.to('cuda') for k, v in model.state_dict().items()}",
        "sd = {k: v.clone() for k, v in model.state_dict().items()}",
        "def convert_checkpoint(sd):\n    return {k: v.half() for k, v in sd.items()}",
        "sd = {k: v.float() for k, v in model.state_dict().items()}",
    )
    invalid = (
        Invalid("sd = {k: v.half() for k, v in model.state_dict().items()}"),
        Invalid("import torch\nsd = {k: v.to(torch.bfloat16) for k, v in params.items()}"),
    )
