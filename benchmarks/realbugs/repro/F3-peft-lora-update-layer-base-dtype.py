"""Reproduction for F3-peft-lora-update-layer-base-dtype (peft, real package).

LoraLayer.update_layer ends with `self.to(weight.device, dtype=weight.dtype)`:
the freshly created, trainable lora_A/lora_B are cast to the frozen base
layer's dtype. With a bf16/fp16 base model the adapters that get trained are
bf16/fp16 (no fp32 master copy; fp16 + GradScaler fails with "Attempting to
unscale FP16 gradients"). Fixed by PR huggingface/peft#1706 (autocast_adapter_dtype,
cast back to float32 after injection).

Usage: python repro/F3-peft-lora-update-layer-base-dtype.py [buggy|fixed|VERSION]   (buggy 0.11.1, fixed 0.12.0)
"""
import _site
_site.use("peft", _site.version(), "transformers-4.41.2", "deps-hf4-tok0.19", "deps-common")

import torch
from torch import nn
import peft
from peft import LoraConfig, get_peft_model


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        return self.out(self.lin(x))


print("peft", peft.__version__)
model = get_peft_model(Tiny().to(torch.bfloat16), LoraConfig(r=2, target_modules=["lin"]))
trainable = {n: p.dtype for n, p in model.named_parameters() if p.requires_grad}
print("trainable parameters:", trainable)
if any(d != torch.float32 for d in trainable.values()):
    print(f"BUG REPRODUCED: trainable LoRA adapters cast to the base dtype {sorted(set(map(str, trainable.values())))}")
else:
    print("FIXED: trainable LoRA adapters are float32 on a bf16 base model")
