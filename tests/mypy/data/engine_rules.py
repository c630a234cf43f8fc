"""Rules the plugin takes from the shared LibCST engine, at the CLI's lines and columns."""
from typing import Any

import jax
import torch


def scale(x: Any, dtype: Any = torch.float32) -> Any:  # expect: DTL101
    return x


def recast(params: Any) -> Any:
    return jax.tree_util.tree_map(lambda p: p.astype(torch.float16), params)  # expect: DTL301


def load(model: Any, path: str) -> None:
    model.load_state_dict({k: v.half() for k, v in torch.load(path).items()})  # expect: DTL302


def uses_helper(model: Any) -> None:
    convert_weights_to_lp(model, dtype=torch.bfloat16)  # expect: DTL303


def convert_weights_to_lp(model: Any, dtype: Any) -> None: ...


def unicode_line(模型: Any, dtype: Any = torch.float32) -> Any: return 模型  # expect: DTL101


def quiet(x: Any, dtype: Any = torch.float32) -> Any:  # noqa: DTL101
    return x
