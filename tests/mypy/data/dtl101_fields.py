"""DTL101 on Flax module and dataclass fields, known by type and followed through aliases."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import flax.linen as nn
import jax.numpy as jnp

F32 = jnp.float32


class Dense(nn.Module):
    features: int
    dtype: Any = jnp.float32  # expect: DTL101
    param_dtype: Any = jnp.float32


class Aliased(nn.Module):
    dtype: Any = F32  # expect: DTL101


class Sub(Dense):
    compute_dtype: Any = F32  # expect: DTL101


@dataclasses.dataclass
class Cfg:
    dtype: str = "float32"  # expect: DTL101
    out_dtype: Optional[Any] = None


def layer(x: Any, dtype: Any = jnp.float32) -> Any:  # expect: DTL101
    return x
