"""What ``torch.autocast`` does to a module's output dtype, for the autocast policies.

Autocast casts the inputs of a listed set of ops to the lower precision (matmuls,
convolutions), runs another set in float32 (on CUDA: norms, softmax, losses), and
leaves every other op to type promotion. So float32 is what autocast produces for
an embedding, a residual add of a float32 stream, or a dropout of a float32 tensor,
and a guard with an autocast policy accepts it there. What autocast would *not*
produce is reported: float32 out of a module whose own op autocast lowers (a Linear
returning float32 means autocast was off or its output was cast back), float32 out
of bf16/fp16 inputs and params by a module autocast does not run in float32 (a
silent widening), or a floating dtype other than float32 and the compute dtype.

torch keeps these op lists in C++ and exposes them to Python only in its internal
test suite, so the module-level tables below are transcribed from the autocast docs
("CUDA Ops that can autocast to float16/float32", "CPU Ops that can autocast to
bfloat16/float32") and keyed by the module class that runs the op.
"""

from __future__ import annotations

#: Module classes whose op autocast runs in the lower precision, on every device type.
LOWER_PRECISION = frozenset({
    "Linear", "LazyLinear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "LazyConv1d",
    "LazyConv2d", "LazyConv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "MultiheadAttention", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell",
    # transformers' GPT-2 style Conv1D is an addmm, lowered like a Linear.
    "Conv1D",
})

_LOSSES = frozenset({
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "CosineEmbeddingLoss", "CTCLoss",
    "HingeEmbeddingLoss", "KLDivLoss", "L1Loss", "MarginRankingLoss", "MSELoss",
    "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss",
    "PoissonNLLLoss", "SmoothL1Loss", "HuberLoss", "SoftMarginLoss", "TripletMarginLoss",
})

#: Module classes whose op autocast runs in float32, per device type.
FLOAT32 = {
    "cuda": _LOSSES | {"LayerNorm", "GroupNorm", "Softmax", "LogSoftmax", "Softmin",
                       "CosineSimilarity", "PairwiseDistance", "Softplus"},
    "cpu": _LOSSES | {"AvgPool3d", "AdaptiveAvgPool3d", "Upsample", "FractionalMaxPool2d",
                      "FractionalMaxPool3d", "AdaptiveMaxPool3d", "Softmin"},
}


def runs_in_float32(module_type: str, device_type: str) -> bool:
    """Whether autocast on ``device_type`` runs this module's op in float32."""
    return module_type in FLOAT32.get(device_type, FLOAT32["cuda"])


def is_lowered(module_type: str) -> bool:
    """Whether autocast casts this module's op to the lower precision."""
    return module_type in LOWER_PRECISION
