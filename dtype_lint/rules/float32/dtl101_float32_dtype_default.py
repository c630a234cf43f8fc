"""DTL101: a computation-dtype parameter or class field that defaults to float32."""

from __future__ import annotations

from dtype_lint.concepts import dtype_defaults, test_code
from dtype_lint.core.rule import Finds, Invalid, Rule
from dtype_lint.core.ruledoc import RuleDoc


class Float32DtypeDefault(Rule):
    doc = RuleDoc(
        code="DTL101",
        name="float32-dtype-default",
        summary="Computation dtype defaults to float32",
        what_it_does="""
            Checks for function parameters and class fields (dataclasses, Flax `nn.Module`
            fields) that hold a computation dtype (`dtype`, `compute_dtype`, ...) and
            default to float32 in any spelling: `torch.float32`, `torch.float`,
            `jnp.float32`, `np.float32`, `tf.float32`, `"float32"`, `np.dtype("float32")`.
            What the dtype *does* in the file decides, not only its name
            (`dtype_lint.concepts.layer_facts`): not reported are a function with an initializer's
            signature (`(key, shape, dtype=...)`); a dtype whose every use is the dtype of
            parameter or state creation (`self.param`, `self.variable`,
            `hk.get_parameter`, `hk.get_state`, `add_weight`, an initializer such as
            `kernel_init(key, shape, dtype)` or `nn.Parameter(torch.zeros(..., dtype))`),
            directly or through an attribute of `self` (the `param_dtype` role); a dtype
            that only turns booleans or integers into floats (a comparison, a logical op,
            a one-hot, a mask or index cast to it) or is only passed on to such a
            parameter of another function of the file; a field that a layer whose forward
            is in view never reads; and a table builder the file calls at init time
            (`__init__`/`setup`, `register_buffer`), whose other callers pass their own
            dtype on (their default is the one that matters), or whose every call in the
            file has its result cast back where it is applied: a float32 island by design
            (a rotary table cast back by the function that applies it, followed through
            names, tuple unpacking and arithmetic, through the methods that return it to
            their callers, into buffers it is copied into, and into the values that are
            cast back after it flows into them: `out = F.linear(codes, w)` before
            `out.to(w.dtype)`, `codes.append(c)`; unpacked from a pair, each target must
            be cast back), unless the public builder converts a tensor it is given to the
            dtype (`fov.to(dtype=dtype)`, itself or through a function of the file it
            hands the dtype to; positions, coordinates and integer values aside): a
            caller in another file hands it bf16 tensors to upcast; nor a dtype a function computes in and whose every
            returned value it casts back to another value's dtype (`out.to(x.dtype)`,
            `type_as`) or a low precision: the float32 island stays inside. A returned
            value carries the cast back when arithmetic combines it only with numbers and
            other values that carry it (noise made with `dtype=latents.dtype`), and an
            input returned before anything is assigned to it (`if output_type ==
            "latent": return latents`) is the caller's value, untouched. Nor is the
            default of a method that overrides one which its base classes in other files
            call (found through the project model), where every such call passes the
            dtype: those calls are its callers. Nor are an array creator's
            dtype (`shape` right before it: `init(shape, dtype)`, `get_state(name, shape,
            dtype, init)`, a descriptor class with `shape` and `dtype` fields), unless
            what it makes is a buffer of its class that the forward pass writes
            activations into (`init_cache(shape, dtype)` storing `self.cached_key`, then
            `self.cached_key[...] = key` in `__call__`; a KV cache registered as a buffer
            and filled by `forward`): that dtype is the activations', a mask
            builder's (a function named for a mask, such as `make_causal_mask`), quantised
            code's (a function or class using `uint8`/`int8`/`float8_*` storage or calls
            that quantise: its float32 is the low-bit format's), a NumPy default in a file
            that imports no framework taking NumPy dtypes (torch code: the function makes
            host-side arrays), or anything in test code. A class recognised as a
            layer by its structure is not data-side code, whatever its name.
            """,
        why_bad="""
            A layer or helper whose computation dtype defaults to float32 silently upcasts
            bfloat16 or float16 inputs: a mixed-precision run spends float32 time and
            memory in that layer, and nothing warns. Flax layers infer the computation
            dtype from their inputs when `dtype` is `None`; torch factories follow
            `torch.get_default_dtype()`. Parameter storage (`param_dtype`) is different:
            keeping parameters in float32 is deliberate and is not reported.
            """,
        example="""
            class MLP(nn.Module):
                features: int
                dtype: jnp.dtype = jnp.float32
            """,
        use_instead="""
            class MLP(nn.Module):
                features: int
                dtype: Optional[jnp.dtype] = None  # follow the inputs or a policy
                param_dtype: jnp.dtype = jnp.float32
            """,
        fix_safety="""
            The fix replaces the default with `None` and, where the parameter or field is
            annotated, makes the annotation admit `None` so that the code still
            type-checks: `Optional[X]` where the file already writes `Optional`, else
            `X | None` where the target Python has it (`target-version`, or the lower
            bound of `requires-python`; 3.10 by default), else `Optional[X]` with
            `from typing import Optional` added. It is unsafe: code that relied on the
            float32 default (or cannot handle `None`) changes behaviour.
            """,
        options="""
            - `param-dtype-names`: names that store parameters and are never reported.
            - `compute-dtype-names`: names that hold a computation dtype.
            - `entry-point-functions`, `entry-point-classes`: functions (such as
              `from_*` alternate constructors like `from_pretrained`, or `main`) and
              classes (whose constructor is the entry point) whose defaults are a user's
              choice, not a layer's, and are not reported.
            - `data-side-names`: functions, classes and modules (by file name) on the
              data side (loaders and loading code, collators, converters, samplers,
              augmentation, annotations, pre- and post-processing, image, video and
              audio processors, and logits processors on the output's side), not
              reported.
            - `module-names`: a function taking a model (`def optimize(model, dtype=...)`)
              applies a user's choice to it, and is not reported.
            """,
        confidence="""
            `high` where the default belongs to a layer (a class the file shows to be a
            module, or a function on a layer's forward path); `medium` for a helper or a
            plain class, whose values' meeting the activations is assumed; `low` for a
            top-level model that loads its own weights (its dtype is the user's knob by
            convention), for a one-hot helper, and for a rotary or frequency table's
            builder (its name says so), whose tables are cast back where applied.
            """,
        precision="very-high",
        known_limits="""
            Names decide what a dtype parameter means: a computation dtype under a name
            that is not in `compute-dtype-names` is not seen. A default computed by a call
            (`dtype=get_dtype()`) is not followed. What counts as an entry point is a
            guess: the constructor of a plain class (no base class), a function that takes
            a model, and names in the options above; a layer helper written as a plain
            class is missed, and a data-side function named otherwise is reported. NumPy
            data helpers (`def spectrogram(wave, dtype=np.float32)`) in JAX or TensorFlow
            code are reported unless their names say they are on the data side. A mask
            builder is known by its name only. Roles are followed within one
            file: a dtype passed to a function of another module, or a field read by a
            subclass elsewhere, counts as a computation dtype (or, when the class never
            reads it, as unread). Int-to-float sources are recognised by the expression
            (comparisons, logical ops, one-hot) or by a value's name (`mask`, `idx`,
            `ids`). A builder's results are followed to their casts back within the file:
            a public function with no call in its own file, or whose results are used in
            another, is reported. The flow into a cast back is read in source order
            within a function; a loop that casts back, at its top, a value assigned
            further down is not seen.
            """,
    )
    message = (
        "'{name}' defaults to float32: bf16/fp16 inputs are silently upcast. "
        "Default to None and follow the inputs' dtype or a policy"
    )
    fix = "unsafe"
    options_used = ("param-dtype-names", "compute-dtype-names", "entry-point-functions", "entry-point-classes",
                    "data-side-names", "module-names")
    finds = Finds(
        at=(dtype_defaults.ComputeDtypeDefaults,),
        unless=(test_code.TEST_CODE, dtype_defaults.USER_CHOICE, dtype_defaults.BENIGN_ROLE,
                dtype_defaults.HOST_SIDE, dtype_defaults.BASES_PASS, dtype_defaults.FULL_PRECISION_ONLY,
                dtype_defaults.PRETRAINED_MODEL, dtype_defaults.ONE_HOT, dtype_defaults.TABLE_BUILDER),
    )

    valid = (
        "def f(x, dtype=None): ...",
        "def f(x, param_dtype=jnp.float32): ...",
        "class Dense(nn.Module):\n    param_dtype: jnp.dtype = jnp.float32\n    dtype: Optional[jnp.dtype] = None",
        "def from_pretrained(path, dtype=jnp.float32): ...",
        'def f(x, dtype="int32"): ...',
        "DTYPES = {'fp32': torch.float32}",
        "class BatchConverter:\n    def __init__(self, dtype=torch.float32):\n        self.dtype = dtype",
        "class Pipeline:\n    def __init__(self, device='cpu', dtype='float32'): ...",
        "def random_mask(n, device=None, dtype=torch.float32): ...",
        "def build_eval_loader(path, dtype=np.float32): ...",
        "def optimize(model, dtype=torch.float32): ...",
        "class Opt:\n    def __init__(self, momentum_dtype=jnp.float32): ...",
        "def get_state(name, shape, dtype=jnp.float32, init=None): ...",
        "def make_causal_mask(n, dtype=torch.float32): ...",
        "import numpy as np\nimport torch\ndef rescale(image, scale, dtype=np.float32): ...",
        "def dequantize(blocks, dtype=torch.float32):\n    return blocks.view(torch.uint8).to(dtype)",
    )
    invalid = (
        Invalid("def f(x, dtype=torch.float32): ...", "def f(x, dtype=None): ..."),
        Invalid("import jax.numpy as jnp\nclass Dense(nn.Module):\n    dtype: jnp.dtype = jnp.float32\n",
                "import jax.numpy as jnp\nclass Dense(nn.Module):\n    dtype: jnp.dtype | None = None\n"),
        Invalid("from typing import Optional\nimport torch\n"
                "def f(x: Optional[torch.Tensor], dtype: torch.dtype = torch.float32): ...",
                "from typing import Optional\nimport torch\n"
                "def f(x: Optional[torch.Tensor], dtype: Optional[torch.dtype] = None): ..."),
        Invalid('def f(x, compute_dtype="float32"): ...', "def f(x, compute_dtype=None): ..."),
        Invalid("from torch import float32 as f32\ndef f(x, dtype=f32): ...",
                "from torch import float32 as f32\ndef f(x, dtype=None): ..."),
        Invalid("def make_kernel(size, *, device=None, dtype=torch.float32): ...",
                "def make_kernel(size, *, device=None, dtype=None): ..."),
        Invalid("class Block(nn.Module):\n    def __init__(self, dtype=torch.float32): ...",
                "class Block(nn.Module):\n    def __init__(self, dtype=None): ..."),
        Invalid("import jax.numpy as jnp\nimport numpy as np\ndef attend(q, k, dtype=np.float32): ...",
                "import jax.numpy as jnp\nimport numpy as np\ndef attend(q, k, dtype=None): ..."),
        Invalid("import jax.numpy as jnp\nclass Attend(nnx.Module):\n"
                "    def init_cache(self, shape, dtype=jnp.float32):\n        self.keys = jnp.zeros(shape, dtype)\n"
                "    def __call__(self, k):\n        self.keys[0] = self.proj(k)\n        return self.keys",
                "import jax.numpy as jnp\nclass Attend(nnx.Module):\n"
                "    def init_cache(self, shape, dtype=None):\n        self.keys = jnp.zeros(shape, dtype)\n"
                "    def __call__(self, k):\n        self.keys[0] = self.proj(k)\n        return self.keys"),
    )
