"""DTL103: float32 pinned inside a layer's forward/__call__ with no cast back."""

from __future__ import annotations

from dtype_lint.concepts import deliberate, forward_pins, test_code
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


class Float32InForward(Rule):
    doc = RuleDoc(
        code="DTL103",
        name="float32-in-forward",
        summary="float32 pinned inside forward/__call__",
        what_it_does="""
            Checks the forward path of layers (see below) for
            tensors created or cast with a hardcoded float32 dtype
            (`torch.zeros(n, dtype=torch.float32)`, `x.to(torch.float32)`,
            `x.astype(jnp.float32)`) when nothing in the method casts back to an input's
            dtype, a configured dtype or a low-precision dtype. Not reported: the loss
            side (logits, losses and labels in float32, and loss classes), NumPy arrays
            (`np.array(lens, dtype=np.float32)`: host-side bookkeeping), casts right
            before `.numpy()`/`.tolist()`/`.item()`, and the `__call__` of a user-facing
            wrapper (`entry-point-classes`), which converts the user's inputs.

            Layers and their forward path come from `dtype_lint.concepts.layers`, by
            structure rather than by framework: a class deriving from a torch, Lightning,
            Flax, Haiku, Keras, Equinox, Objax or Trax-style layer (a base named
            `*Module`/`*Layer`/`*Block`/`*Model`/`*Cell`, or a framework layer class such as
            `nn.LayerNorm`), a class whose forward (`forward`, `forward_*`, `__call__`,
            Keras' `call`) computes with parameters (`self.param`, `get_parameter`,
            `self.weights`...) or calls sub-layers, and subclasses of those in the file.
            The path is their forward methods plus the functions and methods of the file
            that they call, transitively, and those called by lambdas a layer stores on
            itself; a call whose result the caller casts back (`f(x).to(x.dtype)`, a name
            later cast, a name handed, as it is or moved to a device, to a function of the
            file that casts back or to a sub-layer whose class's forward in the file
            does, or a name whose value flows into one of those before it is cast) is
            not followed. Also not reported: dtypes in the arguments of parameter and
            state creation (`self.variable(..., lambda s: jnp.zeros(s, jnp.float32))`),
            NumPy arrays on the host (`x.cpu().numpy().astype(np.float32)`, and in torch
            code `.astype` or a NumPy dtype), values stored into a cache or recurrent
            state (`cache.update(...)`), casts of values with no floating dtype (a
            comparison, an inverted mask, an integer `arange`), and a float32 value that,
            within the function and without being applied to a sub-layer there (an
            attribute of `self` built from a layer), flows into a sin/cos/exp table, into
            integers (`.long()`, `bucketize`), or into a name or call that says what it
            is: logits, losses and labels, a router's (`router_logits`: MoE routing is
            float32 on purpose and cast back where experts are combined), a rotary or
            frequency table (`freqs`, `build_rotary_...`, or a function named so). Such
            values are handed on, to be cast where they are applied: a table passed to a
            layer beside its input (`block(h, rotary_emb=table)`, `checkpoint(block, h,
            table)`: a called object that is not a function or method of the file) is the
            layer's to apply, and what the layer returns follows its own input. Nor is a 0-dim torch
            tensor made from a Python number (`torch.tensor(x.size(-1), dtype=...)`),
            which torch's promotion rules keep from widening other tensors. A cast
            back may name the input's dtype through a variable (`kept = x.dtype` ...
            `.to(kept)`). Array constructors with a positional dtype
            (`jnp.asarray(w, jnp.float32)`) count, and so do strongly typed float32
            scalars in JAX code (`jnp.float32(r_max)`, and `np.float32(eps)` outside a
            torch module): unlike a Python float, they promote the bf16/fp16 arrays they
            meet (torch treats a NumPy scalar like a Python number). A layer's `__init__`
            or `setup` that keeps a float32 tensor as a plain attribute (`self.mean =
            torch.tensor(m, dtype=torch.float32)`: not a parameter or buffer, so
            `model.half()`, `.to(dtype)` and dtype policies leave it float32) is reported
            there when its forward path puts the attribute into arithmetic as it is or
            only moved to a device (`self.mean.to(x.device)`), and no method casts it.
            A cast back to a literal low dtype under a test for that dtype alone (`if
            self.weight.dtype == torch.float16: h = h.to(torch.float16)`) brings back
            only float16 inputs: it silences the pins under the same test, but a pin
            before it is reported (a bfloat16 model leaves the layer in float32) unless
            such tests cover float16 and bfloat16 together.

            Also not reported (facts shared with the other float32 rules): quantised code (a
            function or class using `uint8`/`int8`/`float8_*` storage or calls that
            quantise: scales, lookup tables and biases that low-bit kernels take in
            float32), a bit reinterpretation (`w.view(dtype=torch.float32)`), a
            value stored as a parameter or buffer, a cast whose receiver is a whole
            module (`concepts.modules` says so, or the result is unused:
            `self.vae.to(torch.float32)` casts in place, which only a module does;
            DTL303 judges module casts), code in a class named for a rotary or
            frequency table, a float32 value handed to a function or method of the
            file that casts its result back, or to a table builder (`self.rope(...,
            dtype=torch.float32)`), and test code. A value counts as cast back when
            a name holding it appears anywhere in the receiver of a cast back (`(x +
            table).to(x.dtype)`, `grid_sample(t, grid).to(x.dtype)`), also past
            method calls on a helper's result (`helper(c).flip(-1)`).
            """,
        why_bad="""
            Inside a layer, a pinned float32 makes every later operation float32: a
            bfloat16 model spends float32 time and memory from that point on, and its
            output dtype no longer follows its inputs.
            """,
        example="""
            def forward(self, x):
                pe = torch.zeros(x.shape[1], self.dim, dtype=torch.float32, device=x.device)
                return x + pe
            """,
        use_instead="""
            def forward(self, x):
                pe = torch.zeros(x.shape[1], self.dim, dtype=x.dtype, device=x.device)
                return x + pe
            """,
        confidence="""
            `high`: the pin and the forward path it lies on are both in the file (or in
            files the project model read); `low` for a conversion to float32 under a test
            that the value holds another, named dtype (an fp8 scale's format).
            """,
        precision="medium",
        known_limits="""
            A float32 island is recognised by a cast in the same method whose dtype
            mentions `dtype` (`.to(x.dtype)`, `.astype(self.dtype)`, `type_as`) or names
            float16/bfloat16, or by a helper the value is handed to that casts back (any
            cast back in it counts): a function of this file or, through the project
            model, of another, or a sub-layer whose class's `forward` casts back (a norm
            that computes in float32 and returns the input's dtype), in this file or
            another, its own or inherited from a base in another file; one cast back
            anywhere in the method
            silences every pin in it. Quantised code is known by low-bit dtypes and
            `quantiz*` names in its function or class, so a quantised module in a file of
            its own whose class shows neither is reported. The loss side
            is recognised by name (`logits`, `loss`, `labels`, classes named `*Loss*`);
            a loss computed in a model's forward under other names is reported. Other
            methods are DTL104's, which sees only pins tied to an input. The forward path
            stops at the file's edge: a helper imported from another module is asked only
            whether it casts back, and a table cast back only by a caller in another file is
            reported where it is applied in this one (or not at all when it is handed
            on). A float32 attribute stored in `__init__` is seen only where the class
            (or its in-file family) reads it in forward arithmetic itself, directly or
            through a local name; a function handed to a functional layer combinator
            (`Fn("name", f)`) is not seen. Routers, rotary tables and logits are recognised partly by name
            (`router`, `rope`/`rotary`/`freq`, `logit`/`loss`/`label`); a computation
            named so is not reported even where it is applied to activations outside a
            sub-layer call. A module that a model of the same file keeps in float32 by
            name (`_keep_in_fp32_modules`), and the modules it holds, are not reported:
            their weights are float32 too; a model in another file that lists it is not
            seen.
            """,
    )
    message = (
        "float32 pinned in {method}: everything after it runs in float32 whatever the "
        "input dtype; use the input's dtype (x.dtype) or the layer's configured dtype"
    )
    finds = Finds(
        at=(forward_pins.PinnedInForward,),
        unless=(test_code.TEST_CODE, deliberate.DELIBERATE, forward_pins.LOSS_SIDE_OUTPUT,
                forward_pins.CONVERTS_ANOTHER_DTYPE),
    )

    valid = (
        "class L(nn.Module):\n    def forward(self, x):\n        return x.to(x.dtype)",
        "class L(nn.Module):\n    def forward(self, x):\n"
        "        y = x.to(torch.float32).softmax(-1)\n        return y.to(x.dtype)",
        "class L(nn.Module):\n    def setup(self):\n        self.w = torch.zeros(3, dtype=torch.float32)",
        "class L(nn.Module):\n    def __init__(self, m):\n        super().__init__()\n"
        "        self.m = torch.tensor(m, dtype=torch.float32)\n\n"
        "    def forward(self, x):\n        return x - self.m.to(x.dtype)",
        "def forward(x):\n    return x.to(torch.float32)",
        "class L(nn.Module):\n    def forward(self, x):\n        assert x.dtype == torch.float32\n        return x",
        "class L(nn.Module):\n    def forward(self, x):\n"
        "        w = torch.softmax(x, -1, dtype=torch.float32).to(torch.float16)\n        return w",
        "import jax.numpy as jnp\nclass Head(nn.Module):\n    def __call__(self, h):\n"
        "        logits = self.proj(h)\n        return logits.astype(jnp.float32)",
        "import numpy as np\nclass Enc(nn.Module):\n    def forward(self, x, lens):\n"
        "        lens = np.array(lens, dtype=np.float32)\n        return self.rnn(x), lens",
        "class CTCHead(nn.Module):\n    def forward(self, logits):\n"
        "        return nn.functional.log_softmax(logits, dim=-1, dtype=torch.float32)",
        "class BoxLoss(nn.Module):\n    def forward(self, outputs, n):\n"
        "        return torch.as_tensor([n], dtype=torch.float, device=outputs.device)",
        "class Retriever(nn.Module):\n    def forward(self, h):\n"
        "        return self.index(h.detach().to(torch.float32).numpy())",
    )
    invalid = (
        Invalid("class L(nn.Module):\n    def forward(self, x):\n"
                "        return x + torch.zeros(3, dtype=torch.float32)"),
        Invalid("import jax.numpy as jnp\nclass L(nn.Module):\n    def __call__(self, x):\n"
                "        return x.astype(jnp.float32) * 2"),
        Invalid("class Enc(nn.Module):\n    def forward_points(self, pts):\n"
                "        return self.embed(pts.to(torch.float32))"),
        Invalid("import jax.numpy as jnp\nclass Radial(nn.Module):\n    def __call__(self, r):\n"
                "        return self.mlp(r / jnp.float32(self.r_max))"),
        Invalid("class Norm(nn.Module):\n    def __init__(self, m):\n        super().__init__()\n"
                "        self.m = torch.tensor(m, dtype=torch.float32)\n\n"
                "    def forward(self, x):\n        return x - self.m.to(x.device)"),
    )
