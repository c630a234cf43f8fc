"""Reproduction for F3-trl-peft-module-casting-to-bf16 (trl, real package).

trl's SFT/DPO/KTO/ORPO/CPO trainers call trl.trainer.utils.peft_module_casting_to_bf16(model)
when args.bf16 is set and the base model is loaded in 4 bit. In trl <= 0.9.2 that
helper walks model.named_modules() and does `module.to(torch.bfloat16)` for every
peft BaseTunerLayer, i.e. it casts the trainable LoRA adapters (which peft /
prepare_model_for_kbit_training keep in float32) to bf16 before training.
Fixed by PR huggingface/trl#1644 ("don't cast the trainable lora layers to half precision").

We build a PeftModel whose adapters are float32 (as after prepare_model_for_kbit_training)
and run the library's helper on it.

Usage: python repro/F3-trl-peft-module-casting-to-bf16.py [buggy|fixed|VERSION]   (buggy 0.8.6, fixed 0.9.3)
"""
import _site
_site.use("trl", _site.version(), "peft-0.11.1", "transformers-4.41.2", "deps-hf4-tok0.19", "deps-pandas",
          "deps-common")

import torch
from torch import nn
import trl
from peft import LoraConfig, get_peft_model
from trl.trainer.utils import peft_module_casting_to_bf16


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        return self.out(self.lin(x))


print("trl", trl.__version__)
model = get_peft_model(Tiny(), LoraConfig(r=2, target_modules=["lin"]))
before = {n: p.dtype for n, p in model.named_parameters() if p.requires_grad}
peft_module_casting_to_bf16(model)      # what SFTTrainer.__init__ does under bf16 + 4-bit
after = {n: p.dtype for n, p in model.named_parameters() if p.requires_grad}
print("trainable before:", before)
print("trainable after :", after)
if any(d == torch.bfloat16 for d in after.values()):
    print("BUG REPRODUCED: the trainer's setup step cast the trainable LoRA adapters float32 -> bfloat16")
else:
    print("FIXED: trainable LoRA adapters stay float32 after the trainer's casting step")
