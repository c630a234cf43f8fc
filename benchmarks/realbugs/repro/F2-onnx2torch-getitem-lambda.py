"""F2-onnx2torch-getitem-lambda (imports the real package).

onnx2torch.convert inserts `lambda x, index: x[index]` as the call_function target of every fx node
that picks one output of a multi-output ONNX node (Split, TopK, ...); the resulting GraphModule keeps
the lambda, so torch.save(model) fails. Fixed release: operator.getitem is the target.

torchvision is needed only by onnx2torch's NMS/RoiAlign converters; a placeholder module stands in
for it so the converter package imports against the CPU-only torch here.

Usage: python repro/F2-onnx2torch-getitem-lambda.py [buggy|fixed|VERSION]   (buggy 1.5.4, fixed 1.5.6)
"""
import os, sys, io, pickle, types
import _site
VER = _site.use("onnx2torch", _site.version(), "deps-onnx")

_tv = types.ModuleType("torchvision"); _tv.ops = types.ModuleType("torchvision.ops"); _tv.ops.roi_align = None
sys.modules.setdefault("torchvision", _tv); sys.modules.setdefault("torchvision.ops", _tv.ops)

import torch
from onnx import helper, TensorProto
from onnx2torch import convert

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 2])
b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 2])
nodes = [helper.make_node("Split", ["x"], ["s0", "s1"], axis=1),
         helper.make_node("Relu", ["s0"], ["a"]), helper.make_node("Relu", ["s1"], ["b"])]
onnx_model = helper.make_model(helper.make_graph(nodes, "g", [x], [a, b]),
                               opset_imports=[helper.make_opsetid("", 11)])
model = convert(onnx_model)
try:
    torch.save(model, io.BytesIO())
except Exception as e:                          # fx reports the lambda as "not found" (its own error type)
    print(f"BUG REPRODUCED: onnx2torch {VER}: torch.save of converted Split model fails: {type(e).__name__}: {e}")
else:
    print(f"FIXED: onnx2torch {VER}: converted Split model saves")
