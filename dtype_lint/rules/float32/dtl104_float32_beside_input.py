"""DTL104: float32 pinned right beside an input tensor, outside a layer's forward."""

from __future__ import annotations

from dtype_lint.concepts import beside_input, deliberate, test_code
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


class Float32BesideInput(Rule):
    doc = RuleDoc(
        code="DTL104",
        name="float32-beside-input",
        summary="float32 pinned beside an input tensor",
        what_it_does="""
            Checks functions and methods (other than a layer's forward path, which is
            DTL103's: its forward methods and the helpers of the file they call)
            for two ways of pinning float32 right next to an input tensor:
            a tensor created on the input's device but in float32
            (`torch.zeros(x.shape, dtype=torch.float32, device=x.device)`), and a tensor
            cast to float32 and combined in arithmetic with one that is not
            (`feats * mask.to(torch.float32)`). Functions that cast back to an input's
            dtype or a low-precision dtype are float32 islands and are not reported, nor
            is the loss side (`loss * mask.to(torch.float32)`, loss classes), arithmetic
            with a NumPy array (host-side), or a device taken from an integer, index or mask tensor
            (`device=input_ids.device`), which has no floating dtype to follow. Nor are
            casts of values with no floating dtype (a comparison, an inverted mask, an
            array made with an integer dtype), functions and classes on the data side
            (`data-side-names`), pins whose value flows into a sin/cos/exp table, into
            integers or into logits without being applied to a sub-layer there
            (`dtype_lint.concepts.deliberate`), and a layer's forward path (DTL103's).
            Shared with DTL103: quantised code, bit reinterpretation
            (`.view(dtype=...)`), parameter and buffer storage, in-place (module) casts,
            values handed to a helper that casts back, modules kept in float32 by name
            (`_keep_in_fp32_modules`), a private helper (`_name`) whose every call in the
            file has its result cast back by the caller (followed through names,
            containers, arithmetic and the values it flows into before the cast: an
            integer codebook decoded in float32 and cast to the weights' dtype), and test
            code. A cast to a NumPy
            dtype in a file that imports no framework taking NumPy dtypes (torch code)
            makes a host-side array and is not reported.
            """,
        why_bad="""
            The code follows the input in one respect (its device, its values) and pins
            the other: a bfloat16 or float16 input comes back as float32, or is promoted
            to float32 by the arithmetic, so everything downstream runs in float32 and
            the result no longer has the dtype the caller passed in.
            """,
        example="""
            def refine(heatmap):
                out = torch.zeros(heatmap.shape, dtype=torch.float32, device=heatmap.device)
                return out + heatmap
            """,
        use_instead="""
            def refine(heatmap):
                out = torch.zeros_like(heatmap)  # or dtype=heatmap.dtype
                return out + heatmap
            """,
        confidence="""
            `low` always, the audit mode's: outside a layer's forward, that the helper's
            result meets the activations is assumed from the input it is made beside,
            and outside readers judged 5 of its first 8 findings at the former default
            real (the others were recurrent state or bookkeeping cast back elsewhere).
            """,
        known_limits="""
            Only a device written as `<parameter>.device` counts as following an input: a
            device kept in a variable is not traced. A float32 cast is seen in arithmetic
            only where both operands are written in the same expression; one stored in a
            variable first is not followed. `.float()` is not treated as a pin (it is
            mostly used for masks and metrics). Integer and mask tensors are recognised
            by name only (`ids`, `index`, `mask`, `labels`, `lens`).
            """,
    )
    options_used = ("data-side-names",)
    message = (
        "float32 pinned beside an input tensor ({how}): a bf16/fp16 input comes back as "
        "float32; use the input's dtype (x.dtype, zeros_like, .to(x.dtype))"
    )
    highest = "low"  # the audit mode's (see the Confidence section)
    finds = Finds(
        at=(beside_input.PinnedBesideInput,),
        unless=(test_code.TEST_CODE, deliberate.DELIBERATE),
    )

    valid = (
        "def f(x):\n    return torch.zeros(x.shape, dtype=x.dtype, device=x.device)",
        "def f(a, b):\n    return (a.to(torch.float32) - b.to(torch.float32)).norm()",
        "def f(loss, mask):\n    return loss * mask.to(torch.float32)",
        "def f(x, device):\n    return torch.tensor([1.0], dtype=torch.float32, device=device)",
        "def f(x, m):\n    y = x * m.to(torch.float32)\n    return y.to(x.dtype)",
        "def f(x):\n    return 2 * x.to(torch.float32)",
        "def scores(input_ids, beams):\n"
        "    return torch.zeros((input_ids.shape[0], beams), dtype=torch.float, device=input_ids.device)",
        "import numpy as np\ndef prior(counts):\n    return counts.astype(np.float32) / np.sum(counts)",
    )
    invalid = (
        Invalid("def refine(h):\n    out = torch.zeros(h.shape, dtype=torch.float32, device=h.device)\n"
                "    return out + h"),
        Invalid("def sample(feats, mask):\n    return feats * mask.to(torch.float32)"),
        Invalid("import jax.numpy as jnp\nclass Post:\n    def run(self, x, m):\n"
                "        return x + m.astype(jnp.float32)"),
    )
