"""DTL303: module casts known by type; tensor casts and device moves stay silent."""
from __future__ import annotations

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def setup_fp16(self) -> None:
        self.half()  # expect: DTL303


class OwnCast(nn.Module):
    def half(self) -> OwnCast:  # casts its own way: not torch's Module.half
        return self


def build() -> nn.Linear:
    return nn.Linear(2, 2)


def from_return() -> None:
    build().half()  # expect: DTL303
    build().to(torch.bfloat16)  # expect: DTL303
    build().to("cuda", torch.float16)  # expect: DTL303
    build().to(dtype=torch.float64)  # expect: DTL303
    build().double()  # expect: DTL303
    build().float()  # expect: DTL303


def from_attribute(block: Block) -> None:
    block.proj.bfloat16()  # expect: DTL303


def from_container(layers: list[nn.Module], named: dict[str, nn.Linear]) -> None:
    layers[0].half()  # expect: DTL303
    named["head"].to(torch.float16)  # expect: DTL303


def look_alikes(x: torch.Tensor, net: nn.Module, own: OwnCast) -> torch.Tensor:
    x.half()
    x.to(torch.float16)
    net.to("cuda")
    net.to(torch.device("cpu"))
    own.half()
    return x.float()


def to_fp16(model: nn.Module) -> nn.Module:
    return model.half()  # an explicit casting helper: casting is the point
