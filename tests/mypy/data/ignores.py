# mypy: warn-unused-ignores
"""`# type: ignore[DTL303]` silences exactly that rule on its line."""
from typing import Any

import torch
import torch.nn as nn


def build() -> nn.Linear:
    return nn.Linear(2, 2)


def scale(x: Any, dtype: Any = torch.float32) -> Any: return build().half()  # type: ignore[DTL303]  # expect: DTL101


def only_cast(m: nn.Linear) -> Any:
    return m.half()  # type: ignore[DTL303]


def unused(m: nn.Linear) -> Any:
    return m.to("cuda")  # type: ignore[DTL303]  # unused: a device move is no cast
