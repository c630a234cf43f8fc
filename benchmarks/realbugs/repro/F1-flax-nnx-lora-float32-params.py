"""Reproduction for F1-flax-nnx-lora-float32-params (flax, real package).

flax.nnx.LoRA stores lora_a/lora_b in `param_dtype` (default jnp.float32) and
its __call__ multiplies the input straight into them (`x @ lora_a @ lora_b`)
without promoting to the layer's `dtype`. Asking for dtype=bfloat16 with a
bf16 input still gives a float32 result (issue google/flax#4673).

Usage: python repro/F1-flax-nnx-lora-float32-params.py [buggy|fixed|VERSION]   (buggy 0.10.5, fixed 0.10.6)
Only flax comes from $REALBUGS_SITE/flax-<version>; jax is the interpreter's.
"""
import _site
_site.use("flax", _site.version())

import jax.numpy as jnp
import flax
from flax import nnx

print("flax", flax.__version__)
lora = nnx.LoRA(in_features=4, lora_rank=2, out_features=3, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
x = jnp.ones((2, 4), dtype=jnp.bfloat16)
y = lora(x)
print("params:", lora.lora_a.value.dtype, "| input:", x.dtype, "| output:", y.dtype)
if y.dtype == jnp.float32:
    print("BUG REPRODUCED: LoRA(dtype=bfloat16) on a bf16 input returns float32 "
          "(float32 param_dtype factors meet the activations uncast)")
else:
    print("FIXED: LoRA output follows dtype=bfloat16")
