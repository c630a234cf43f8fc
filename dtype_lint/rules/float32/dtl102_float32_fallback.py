"""DTL102: a dtype lookup or precision switch that falls back to float32."""

from __future__ import annotations

from dtype_lint.concepts import deliberate, fallbacks, test_code
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


class Float32Fallback(Rule):
    doc = RuleDoc(
        code="DTL102",
        name="float32-fallback",
        summary="Dtype lookup falls back to float32",
        what_it_does="""
            Checks for a dtype chosen from a precision setting that falls back to float32
            when the setting is not recognised: `mapping.get(precision, torch.float32)`,
            `dtype or jnp.float32`, `getattr(config, "dtype", torch.float32)`, and
            `torch.bfloat16 if precision == "bf16" else torch.float32`.
            """,
        why_bad="""
            Every value the lookup does not know, a typo (`"bf-16"`), a new mode
            (`"fp8"`), or `"fp16"` where only `"bf16"` is mapped, trains in float32 with
            no error: the run is slower and larger than asked, and nobody notices.
            """,
        example="""
            dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
            """,
        use_instead="""
            DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
            dtype = DTYPES[precision]  # an unknown precision is a KeyError, not float32
            """,
        confidence="""
            `high` for a lookup whose default is float32 (`.get(key, torch.float32)`,
            `getattr(config, "dtype", torch.float32)`); `low` for the else branch of a
            precision switch, which may be the float32 setting itself (on the labelled
            corpora every one was), and for `setting or float32`, which is float32 only
            where nothing is set (the documented default `POLICY.md` counts as benign)
            unless the setting may hold a value the code does not know.
            """,
        known_limits="""
            A fallback spread over several statements (`if ... elif ... else: dtype =
            torch.float32`) is only seen when the `else` branch assigns float32 directly
            and an earlier branch assigns a low-precision dtype. A lookup validated
            elsewhere (an argparse `choices=` list, a check in another class) is still
            reported. A choice is only taken for a lookup when its test compares a value
            (`precision == "bf16"`, `mode in (...)`): a boolean switch (`if use_amp`) is a
            two-way choice whose float32 is meant, a comparison with a dtype object
            (`input_dtype == torch.bfloat16`) checks an input, and a test naming a storage
            dtype (`args.target_params_dtype == "fp16"`) chooses parameter storage. A `.get`/`getattr` whose key is a
            storage dtype (`param-dtype-names`, such as `"momentum_dtype"`) is an option's
            default, not a fallback; nothing in a data-side class or module (`data-side-names`:
            loaders, pre-processing), an entry point (`entry-point-functions`, such as
            `from_pretrained`: the fallback is the user's default), quantised code (see
            DTL101) or test code is reported;
            nor is `x or float32` where `x` names a storage or
            communication dtype (`mixed_precision.reduce_dtype or torch.float32`).
            """,
    )
    message = (
        "unrecognised precision values fall back to float32 and train in float32 silently; "
        "validate the value and raise on unknown ones"
    )
    options_used = ("param-dtype-names", "data-side-names", "entry-point-functions")
    finds = Finds(
        at=(fallbacks.PrecisionFallbacks,),
        unless=(test_code.TEST_CODE, fallbacks.DATA_SIDE_OR_ENTRY, deliberate.QUANTISED_CODE),
    )

    valid = (
        "dtype = DTYPES[precision]",
        "dtype = mapping.get(precision, torch.bfloat16)",
        "dtype = x.dtype if x.dtype == torch.float16 else torch.float32",
        "if x.dtype == torch.float16:\n    y = 1\nelse:\n    y = torch.float32",
        "dtype = torch.bfloat16 if use_cpu_amp else torch.float32",
        'state = getattr(torch, opts.get("momentum_dtype", "float32"))',
        "out = torch.bfloat16 if in_dtype == torch.bfloat16 else torch.float32",
        'if args.params_dtype == "fp16":\n    d = torch.float16\nelse:\n    d = torch.float32',
    )
    invalid = (
        Invalid("dtype = mapping.get(precision, torch.float32)"),
        Invalid("import jax.numpy as jnp\ndtype = config.dtype or jnp.float32"),
        Invalid('dtype = torch.bfloat16 if precision == "bf16" else torch.float32'),
        Invalid('dtype = getattr(config, "torch_dtype", torch.float32)'),
        Invalid('if mp == "bf16":\n    dtype = torch.bfloat16\nelse:\n    dtype = torch.float32'),
    )
