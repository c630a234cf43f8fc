"""Reproduction for F1-deformable-detr-two-stage-proposal-grid (transformers, real package).

In two-stage Deformable DETR, gen_encoder_output_proposals builds the proposal
grid with torch.linspace(..., dtype=torch.float32). The float32 proposals are
returned next to the bf16 encoder output and added to the bf16 box-head output
(enc_outputs_coord_logits = delta + output_proposals), so the two-stage path
promotes to float32 and a later bf16 Linear raises (issue #30906).

We call the library method on bf16 encoder output and check what it returns.
(A full two-stage bf16 forward still fails in 4.42.0 at a later, separate
float32 site, get_proposal_pos_embed, a position table outside this bug.)

Note: transformers 4.42.x pins numpy<2 at import time while torch 2.13 needs
numpy 2; the shim below only answers that import-time version check.

Usage: python repro/F1-deformable-detr-two-stage-proposal-grid.py [buggy|fixed|VERSION]   (buggy 4.41.2, fixed 4.42.0)
"""
import _site
_site.use("transformers", _site.version(), "deps-hf4-tok0.19", "deps-common")

import importlib.metadata as _md
_real_version = _md.version
_md.version = lambda name: "1.26.4" if name == "numpy" else _real_version(name)  # import-time pin check only

import torch
import transformers
from transformers import DeformableDetrConfig, DeformableDetrForObjectDetection, ResNetConfig

print("transformers", transformers.__version__)
torch.manual_seed(0)
backbone = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1],
                        out_features=["stage2", "stage3", "stage4"])
cfg = DeformableDetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
                           backbone=None, d_model=32, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                           decoder_ffn_dim=32, num_queries=5, encoder_n_points=2, decoder_n_points=2,
                           num_feature_levels=4, two_stage=True, with_box_refine=True, two_stage_num_proposals=5)
model = DeformableDetrForObjectDetection(cfg).eval().to(torch.bfloat16)

shapes = torch.tensor([[4, 4], [2, 2]])
seq = int(shapes.prod(1).sum())
enc_output = torch.randn(1, seq, 32, dtype=torch.bfloat16)
padding_mask = torch.zeros(1, seq, dtype=torch.bool)
with torch.no_grad():
    object_query, output_proposals = model.model.gen_encoder_output_proposals(enc_output, padding_mask, shapes)
print("object_query:", object_query.dtype, "| output_proposals:", output_proposals.dtype)
if output_proposals.dtype == torch.float32:
    print("BUG REPRODUCED: bf16 encoder output gets float32 two-stage proposals "
          f"(delta + proposals -> {(object_query[..., :4] + output_proposals).dtype})")
else:
    print("FIXED: two-stage proposals follow the encoder output dtype (bfloat16)")
