"""DTL105: float32 made without naming it (`.float()`, a default-dtype creation) meeting the activations."""

from __future__ import annotations

from dtype_lint.concepts import deliberate, implicit_float32, test_code
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


class ImplicitFloat32(Rule):
    doc = RuleDoc(
        code="DTL105",
        name="implicit-float32",
        summary="float32 made by `.float()` or torch's default dtype meets the activations",
        what_it_does="""
            Checks a layer's forward path (its forward methods and the helpers of the
            file they call) for float32 that gets in without the word: `x.float()`,
            `torch.FloatTensor(...)`, a creation whose dtype torch's default decides
            (`torch.ones(n)`, `torch.empty(b, t, t)`, `torch.full(shape, -inf)`,
            `torch.arange(0.5, n)`, `torch.tensor([0.1])`, `torch.linspace(...)`) and the
            true division of an integer `torch.arange`. Such a value is reported where it
            is made when, in the same function, it meets the activations: arithmetic with
            a forward input or a sub-layer's output, a concatenation with them, or a
            sub-layer's input. A method of the class that returns such a value (a mask
            or table builder, `self._build_causal_mask(...)`) makes its call one too,
            reported at the creation inside it.

            Not reported: values that only serve as booleans or indices (comparisons,
            `masked_fill`'s mask, indexing), a cast on the way (`.to(x.dtype)`,
            `.type_as(x)`), values on the loss side (logits, losses, labels; loss
            classes), data-side functions (`data-side-names`), and test code.
            """,
        why_bad="""
            Under bf16 or fp16 the float32 value promotes whatever it meets: an attention
            mask multiplied into half-precision embeddings makes the pooled output
            float32, a causal mask built with `torch.empty` and added to fp16 scores
            makes the attention float32 (or fails where a kernel insists on one dtype),
            and a timestep or position table fed to a Linear in bf16 raises a dtype
            mismatch. Nothing says float32, so reviews and `grep float32` miss it: this
            is the shape most dtype bugs users report upstream take.
            """,
        example="""
            class MeanPooling(nn.Module):
                def forward(self, token_embeddings, attention_mask):
                    mask = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
                    return (token_embeddings * mask).sum(1) / mask.sum(1)
            """,
        use_instead="""
            class MeanPooling(nn.Module):
                def forward(self, token_embeddings, attention_mask):
                    mask = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).to(token_embeddings.dtype)
                    return (token_embeddings * mask).sum(1) / mask.sum(1)
            """,
        confidence="""
            `low` always: this rule is the audit mode's (`--min-confidence low`). Outside
            readers judged 7 of its first 67 findings on unseen code real: most float32
            made this way is restored after it meets the activations (a recurrent gate
            handed to a kernel that casts its output back, a norm's upcast cast back by
            the caller, a mask the framework converts), in code this rule does not
            follow. The real ones are the shapes users report upstream: a mask multiplied
            into half-precision embeddings, a drop-path scale made with `torch.rand`, a
            causal mask built with `torch.empty`, padding concatenated to the keys.
            """,
        precision="low",
        known_limits="""
            The meeting is read within one function: a builder's value is followed into
            the methods of its own class that call it, not into other classes or files
            (a timestep embedding module whose float32 output another module feeds to a
            Linear is not seen). A value is followed through local names in source order,
            through method calls on it and torch functions of it, not through
            containers or attributes; a cast anywhere in the function to a dtype taken
            from a value lowers every finding there to `low`.
            """,
    )
    message = (
        "float32 made by {kind} is {how}: under bf16/fp16 it promotes or breaks the computation; "
        "make it in the activations' dtype (dtype=x.dtype, .to(x.dtype))"
    )
    highest = "low"  # the audit mode's (see the Confidence section)
    finds = Finds(
        at=(implicit_float32.ImplicitFloat32,),
        unless=(test_code.TEST_CODE, deliberate.DELIBERATE),
    )

    valid = (
        "class P(nn.Module):\n    def forward(self, x, mask):\n"
        "        return x * mask.to(x.dtype)",
        "class P(nn.Module):\n    def forward(self, x, mask):\n"
        "        return x.masked_fill(mask.float() == 0, 0)",
    )
    invalid = (
        Invalid("class P(nn.Module):\n    def forward(self, x, mask):\n"
                "        return x * mask.float()"),
    )
