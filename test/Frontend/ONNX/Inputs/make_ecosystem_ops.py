"""Small ONNX graphs for the ops exported ecosystem models need.

Writes, into the folder this script lives in (with pip's `onnx`):

  mask_rotary.onnx   -- a token model whose causal mask (Range, Unsqueeze,
                        LessOrEqual, Where) and rotary table (Range, Mul,
                        Sin, Cos) depend on constants and shapes only: they
                        must fold away at import
  data_ops.onnx      -- Clip (ReLU6), HardSigmoid, HardSwish, Less, And,
                        Where, Expand of a non-constant, Sin, Cos, Max
                        against a scalar, on data: they must import as nn ops
  batch_param.onnx   -- a float initializer [4, 1, 3] whose 4 slices along
                        the batch are equal (a class token an exporter
                        expanded to the batch), concatenated with the data,
                        and an additive mask holding finfo(float32).min
  pool_seq.onnx      -- GlobalAveragePool over a sequence [N, C, L]
  pad_reflect_big.onnx -- a reflect Pad larger than its axis (an error)

  /tmp/venv-torch/bin/python make_ecosystem_ops.py

CI never runs it; the files it writes are committed.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(model, name):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(array, name))


def mask_rotary():
    rng = np.random.default_rng(7)
    t, d = 8, 4
    emb = numpy_helper.from_array(rng.standard_normal((16, d)).astype(np.float32), "emb")
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["x"], name="/embed/Gather"),
        # positions 0..T-1 from the input's shape
        helper.make_node("Shape", ["ids"], ["shape"], name="/pos/Shape"),
        const("one", np.array([1], np.int64)),
        const("two", np.array([2], np.int64)),
        helper.make_node("Slice", ["shape", "one", "two"], ["tlen1"], name="/pos/Slice"),
        const("ax0", np.array([0], np.int64)),
        helper.make_node("Squeeze", ["tlen1", "ax0"], ["tlen"], name="/pos/Squeeze"),
        const("zero", np.array(0, np.int64)),
        const("step", np.array(1, np.int64)),
        helper.make_node("Range", ["zero", "tlen", "step"], ["pos"], name="/pos/Range"),
        # causal mask: key position <= query position
        const("ax1", np.array([1], np.int64)),
        helper.make_node("Unsqueeze", ["pos", "ax0"], ["keys"], name="/mask/Unsqueeze"),
        helper.make_node("Unsqueeze", ["pos", "ax1"], ["queries"], name="/mask/Unsqueeze_1"),
        helper.make_node("LessOrEqual", ["keys", "queries"], ["allowed"], name="/mask/LessOrEqual"),
        const("ninf", np.array(-3.4028234663852886e38, np.float32)),
        const("fzero", np.array(0.0, np.float32)),
        helper.make_node("Where", ["allowed", "fzero", "ninf"], ["bias"], name="/mask/Where"),
        # rotary table from positions
        helper.make_node("Cast", ["pos"], ["posf"], name="/rope/Cast", to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["posf", "ax1"], ["posc"], name="/rope/Unsqueeze"),
        const("invfreq", np.array([[1.0, 0.5, 0.25, 0.125]], np.float32)),
        helper.make_node("Mul", ["posc", "invfreq"], ["angles"], name="/rope/Mul"),
        helper.make_node("Sin", ["angles"], ["sin"], name="/rope/Sin"),
        helper.make_node("Cos", ["angles"], ["cos"], name="/rope/Cos"),
        helper.make_node("Mul", ["x", "cos"], ["xc"], name="/rope/Mul_1"),
        helper.make_node("Mul", ["x", "sin"], ["xs"], name="/rope/Mul_2"),
        helper.make_node("Add", ["xc", "xs"], ["xr"], name="/rope/Add"),
        # scores with the mask
        helper.make_node("Transpose", ["xr"], ["xt"], name="/attn/Transpose", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["xr", "xt"], ["scores"], name="/attn/MatMul"),
        helper.make_node("Add", ["scores", "bias"], ["masked"], name="/attn/Add"),
        helper.make_node("Softmax", ["masked"], ["probs"], name="/attn/Softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "xr"], ["logits"], name="/attn/MatMul_1"),
    ]
    graph = helper.make_graph(
        nodes, "mask_rotary",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, t])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, t, d])],
        [emb])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
         "mask_rotary.onnx")


def data_ops():
    rng = np.random.default_rng(8)
    w = numpy_helper.from_array(rng.standard_normal((6, 6)).astype(np.float32), "w")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="/fc/MatMul"),
        const("lo", np.array(0.0, np.float32)),
        const("hi", np.array(6.0, np.float32)),
        helper.make_node("Clip", ["h", "lo", "hi"], ["relu6"], name="/act/Clip"),
        helper.make_node("HardSigmoid", ["relu6"], ["hsig"], name="/act/HardSigmoid"),
        helper.make_node("HardSwish", ["h"], ["hswish"], name="/act/HardSwish"),
        const("half", np.array(0.5, np.float32)),
        helper.make_node("Less", ["h", "half"], ["small"], name="/sel/Less"),
        helper.make_node("Greater", ["h", "lo"], ["positive"], name="/sel/Greater"),
        helper.make_node("And", ["small", "positive"], ["band"], name="/sel/And"),
        helper.make_node("Where", ["band", "hsig", "hswish"], ["picked"], name="/sel/Where"),
        helper.make_node("Sin", ["picked"], ["s"], name="/trig/Sin"),
        helper.make_node("Cos", ["s"], ["c"], name="/trig/Cos"),
        helper.make_node("Max", ["c", "half"], ["floor"], name="/trig/Max"),
        const("shape3", np.array([4, 1, 6], np.int64)),
        helper.make_node("Reshape", ["floor", "shape3"], ["r3"], name="/rep/Reshape"),
        const("wide", np.array([4, 3, 6], np.int64)),
        helper.make_node("Expand", ["r3", "wide"], ["rep"], name="/rep/Expand"),
        const("flat", np.array([4, 18], np.int64)),
        helper.make_node("Reshape", ["rep", "flat"], ["logits"], name="/rep/Reshape_1"),
    ]
    graph = helper.make_graph(
        nodes, "data_ops",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 18])],
        [w])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
         "data_ops.onnx")


def batch_param():
    rng = np.random.default_rng(9)
    token = rng.standard_normal((1, 1, 3)).astype(np.float32)
    cls = numpy_helper.from_array(np.repeat(token, 4, axis=0), "val_cls")
    w = numpy_helper.from_array(rng.standard_normal((3, 5)).astype(np.float32), "w")
    mask = np.zeros((4, 1, 3), np.float32)
    mask[:, :, 2] = np.finfo(np.float32).min
    maskt = numpy_helper.from_array(mask, "val_mask")
    nodes = [
        helper.make_node("Concat", ["val_cls", "x"], ["seq"], name="/embed/Concat", axis=1),
        helper.make_node("MatMul", ["seq", "w"], ["h"], name="/fc/MatMul"),
        helper.make_node("Transpose", ["seq"], ["seqt"], name="/attn/Transpose", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["seq", "seqt"], ["scores"], name="/attn/MatMul"),
        helper.make_node("Add", ["scores", "val_mask"], ["masked"], name="/attn/Add"),
        helper.make_node("Softmax", ["masked"], ["probs"], name="/attn/Softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "h"], ["logits"], name="/attn/MatMul_1"),
    ]
    graph = helper.make_graph(
        nodes, "batch_param",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, 3])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 3, 5])],
        [cls, w, maskt])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
         "batch_param.onnx")


def pool_seq():
    nodes = [
        helper.make_node("GlobalAveragePool", ["x"], ["p"], name="/pool/GlobalAveragePool"),
        helper.make_node("Flatten", ["p"], ["logits"], name="/pool/Flatten", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "pool_seq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 6])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 4])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
         "pool_seq.onnx")


def pad_reflect_big():
    nodes = [
        const("pads", np.array([0, 0, 3, 0, 0, 1], np.int64)),
        helper.make_node("Pad", ["x", "pads"], ["logits"], name="/pad/Pad",
                         mode="reflect"),
    ]
    graph = helper.make_graph(
        nodes, "pad_reflect_big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 4, 7])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
         "pad_reflect_big.onnx")


if __name__ == "__main__":
    pad_reflect_big()
    pool_seq()
    mask_rotary()
    data_ops()
    batch_param()
