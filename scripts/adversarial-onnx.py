#!/usr/bin/python3
#===- adversarial-onnx.py - Hostile ONNX models for adversarial.py ---------===#
#
# Usage: /usr/bin/python3 scripts/adversarial-onnx.py OUT_DIR
#
# Writes hostile ONNX models into OUT_DIR and OUT_DIR/cases.json, the list
# scripts/adversarial.py turns into cases: for each model its file, what
# gpipe should do with it ("error": a located error naming the node or
# value; "any": import and train it correctly, or refuse it clearly), the
# words an error must contain, and for models gpipe may train a batch
# (`<name>.data.safetensors`) with the loss and the first step's gradients
# numpy computes for it (float64, gradients by central differences), so a
# model gpipe accepts but computes wrongly is caught.
#
# Needs the onnx and numpy Python packages (Debian: python3-onnx). Only
# adversarial.py runs it; the regular test suite does not.
#
#===----------------------------------------------------------------------===#
import json
import zlib
import math
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
CASES = []
F = TensorProto.FLOAT


def add(name, model, expect, names, train=None, raw=None):
    path = os.path.join(OUT, name + ".onnx")
    if raw is not None:
        open(path, "wb").write(raw)
    else:
        open(path, "wb").write(model.SerializeToString())
    case = {"name": name, "file": path, "expect": expect, "names": names}
    if train is not None:
        case.update(train)
    CASES.append(case)


def tensor_info(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model_of(nodes, inputs, outputs, inits=(), opset=17, domain_opsets=None,
             ir_version=8):
    graph = helper.make_graph(nodes, "adversarial", inputs, outputs,
                              list(inits))
    opsets = [helper.make_opsetid("", opset)] if opset is not None else []
    for d, v in (domain_opsets or {}).items():
        opsets.append(helper.make_opsetid(d, v))
    m = helper.make_model(graph, opset_imports=opsets)
    m.ir_version = ir_version
    return m


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


# ---------------------------------------------------------------------------
# Graph-level and generic op cases: a small MLP-shaped graph broken one way.
# ---------------------------------------------------------------------------

RNG = np.random.default_rng(7)
W84 = RNG.standard_normal((8, 4)).astype(np.float32)


def mm_graph(**kw):
    """input [4, 8] -> MatMul w [8, 4] -> Relu -> logits [4, 4]."""
    nodes = kw.get("nodes", [
        helper.make_node("MatMul", ["input", "w"], ["h"], name="/fc/MatMul"),
        helper.make_node("Relu", ["h"], ["logits"], name="/act/Relu")])
    inputs = kw.get("inputs", [tensor_info("input", F, [4, 8])])
    outputs = kw.get("outputs", [tensor_info("logits", F, [4, 4])])
    inits = kw.get("inits", [init("w", W84)])
    return model_of(nodes, inputs, outputs, inits,
                    opset=kw.get("opset", 17),
                    domain_opsets=kw.get("domain_opsets"),
                    ir_version=kw.get("ir_version", 8))


def node(op, ins, outs, name=None, **attrs):
    return helper.make_node(op, ins, outs, name=name or "/n/" + op, **attrs)


def graph_cases():
    add("opset-none", mm_graph(opset=None), "any", ["opset"])
    for v in (1, 6, 21, 99, 1000000000, -3):
        add(f"opset-{v}".replace("-", "-m", 1) if v < 0 else f"opset-{v}",
            mm_graph(opset=v), "any", ["opset", str(v)])
    m = mm_graph()
    m.opset_import.append(helper.make_opsetid("", 13))
    add("opset-duplicate", m, "any", ["opset"])
    add("ir-version-0", mm_graph(ir_version=0), "any", ["ir", "version"])
    add("ir-version-huge", mm_graph(ir_version=1 << 40), "any", ["version"])
    # Ops in other domains.
    add("domain-custom",
        mm_graph(nodes=[node("MatMul", ["input", "w"], ["h"]),
                        helper.make_node("Relu", ["h"], ["logits"],
                                         name="/c/Relu", domain="com.foo")]),
        "error", ["com.foo", "/c/Relu"])
    add("domain-ml",
        mm_graph(nodes=[node("MatMul", ["input", "w"], ["h"]),
                        helper.make_node("Normalizer", ["h"], ["logits"],
                                         name="/ml/Normalizer",
                                         domain="ai.onnx.ml")],
                 domain_opsets={"ai.onnx.ml": 3}),
        "error", ["Normalizer"])
    add("op-unknown",
        mm_graph(nodes=[node("MatMul", ["input", "w"], ["h"]),
                        node("FooBar", ["h"], ["logits"], name="/x/FooBar")]),
        "error", ["FooBar"])
    add("op-empty-type",
        mm_graph(nodes=[node("MatMul", ["input", "w"], ["h"]),
                        helper.make_node("", ["h"], ["logits"], name="/x/e")]),
        "error", ["/x/e", "op"])
    add("input-undefined",
        mm_graph(nodes=[node("MatMul", ["input", "nowhere"], ["h"],
                             name="/fc/MatMul"),
                        node("Relu", ["h"], ["logits"])]),
        "error", ["nowhere"])
    add("input-empty-name",
        mm_graph(nodes=[node("MatMul", ["input", "w"], ["h"]),
                        node("Relu", [""], ["logits"], name="/r/Relu")]),
        "error", ["/r/Relu"])
    add("output-unproduced",
        mm_graph(outputs=[tensor_info("ghost", F, [4, 4])]), "error",
        ["ghost"])
    add("no-outputs", mm_graph(outputs=[]), "error", ["output"])
    add("two-outputs",
        mm_graph(outputs=[tensor_info("logits", F, [4, 4]),
                          tensor_info("h", F, [4, 4])]), "any", ["output"])
    add("no-nodes",
        mm_graph(nodes=[], outputs=[tensor_info("input", F, [4, 8])]),
        "any", ["layer", "output", "input"])
    add("cycle-two",
        mm_graph(nodes=[node("Relu", ["b"], ["a"], name="/cyc/A"),
                        node("Relu", ["a"], ["b"], name="/cyc/B"),
                        node("Add", ["a", "input"], ["logits"])],
                 outputs=[tensor_info("logits", F, [4, 8])]),
        "error", ["/cyc/", "'a'", "'b'", "cycle"])
    add("cycle-self",
        mm_graph(nodes=[node("Add", ["input", "s"], ["s"], name="/self/Add"),
                        node("Relu", ["s"], ["logits"])],
                 outputs=[tensor_info("logits", F, [4, 8])]),
        "error", ["/self/Add", "'s'", "cycle"])
    add("nodes-reversed",
        mm_graph(nodes=[node("Relu", ["h"], ["logits"], name="/act/Relu"),
                        node("MatMul", ["input", "w"], ["h"],
                             name="/fc/MatMul")]),
        "any", ["/act/Relu", "'h'"])
    add("output-defined-twice",
        mm_graph(nodes=[node("MatMul", ["input", "w"], ["h"], name="/a"),
                        node("MatMul", ["input", "w"], ["h"], name="/b"),
                        node("Relu", ["h"], ["logits"])]),
        "error", ["'h'"])
    add("output-is-input",
        mm_graph(nodes=[node("MatMul", ["input", "w"], ["input"], name="/a")],
                 outputs=[tensor_info("input", F, [4, 4])]),
        "error", ["'input'", "/a"])
    # Input types and shapes.
    bare = onnx.ValueInfoProto()
    bare.name = "input"
    add("input-no-type", mm_graph(inputs=[bare]), "error", ["'input'"])
    for elem, label in ((TensorProto.UNDEFINED, "undefined"),
                        (TensorProto.STRING, "string"),
                        (TensorProto.DOUBLE, "double"),
                        (TensorProto.BOOL, "bool"),
                        (TensorProto.FLOAT16, "f16"),
                        (TensorProto.COMPLEX64, "complex")):
        add(f"input-type-{label}",
            mm_graph(inputs=[tensor_info("input", elem, [4, 8])]), "error",
            ["'input'", "/fc/MatMul"])
    add("input-scalar", mm_graph(inputs=[tensor_info("input", F, [])]),
        "error", ["/fc/MatMul", "'input'"])
    add("input-unknown-dim", mm_graph(inputs=[tensor_info("input", F,
                                                          [None, 8])]),
        "error", ["'input'", "dim 0"])
    add("input-no-shape",
        mm_graph(inputs=[helper.make_tensor_value_info("input", F, None)]),
        "error", ["'input'"])
    for dims, label in (([0, 8], "zero"), ([-1, 8], "negative"),
                        ([1 << 40, 8], "huge"),
                        ([1 << 31, 1 << 31, 1 << 31, 8], "overflow"),
                        ([1] * 9 + [4, 8], "rank11")):
        add(f"input-dims-{label}",
            mm_graph(inputs=[tensor_info("input", F, dims)]),
            "error" if label != "rank11" else "any",
            ["'input'", "/fc/MatMul", "dim"])
    # Initializers.
    t = init("w", W84)
    t.raw_data = t.raw_data + b"\0" * 16
    add("init-raw-too-long", mm_graph(inits=[t]), "error", ["'w'"])
    t = init("w", W84)
    t.float_data.extend([1.0] * 32)
    add("init-raw-and-float", mm_graph(inits=[t]), "any", ["'w'"])
    t = init("w", W84)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "../../../../etc/passwd"
    add("init-external-traversal", mm_graph(inits=[t]), "error", ["'w'"])
    t = init("w", W84)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "missing-weights.bin"
    add("init-external-missing", mm_graph(inits=[t]), "error", ["'w'"])
    t = init("w", W84)
    del t.dims[:]
    t.dims.extend([-8, -4])
    add("init-dims-negative", mm_graph(inits=[t]), "error", ["'w'"])
    t = onnx.TensorProto()
    t.name, t.data_type = "w", F
    t.dims.extend([1 << 20, 1 << 20])
    add("init-dims-huge-nodata", mm_graph(inits=[t]), "error", ["'w'"])
    add("init-int64-weight",
        mm_graph(inits=[init("w", np.ones((8, 4), np.int64))]), "error",
        ["/fc/MatMul", "'w'"])
    t = helper.make_tensor("w", TensorProto.STRING, [1], [b"abc"])
    add("init-string", mm_graph(inits=[t]), "error", ["'w'"])
    add("init-duplicate",
        mm_graph(inits=[init("w", W84), init("w", W84 * 2)]), "error",
        ["'w'"])
    add("init-shadows-input",
        mm_graph(inputs=[tensor_info("input", F, [4, 8]),
                         tensor_info("w", F, [8, 4])]), "any", ["'w'"])
    add("init-wrong-shape-3d",
        mm_graph(inits=[init("w", np.ones((2, 8, 4), np.float32))],
                 outputs=[tensor_info("logits", F, [2, 4, 4])]),
        "any", ["/fc/MatMul"])
    add("init-f64",
        mm_graph(inits=[init("w", W84.astype(np.float64))]), "error",
        ["'w'", "/fc/MatMul"])
    # Attributes of the generic ops.
    def unary(op, attrs, ins=None, inits=(), out=(4, 8), name=None):
        nm = name or "/t/" + op
        nodes = [helper.make_node(op, ins or ["input"], ["logits"], name=nm,
                                  **attrs)]
        return model_of(nodes, [tensor_info("input", F, [4, 8])],
                        [tensor_info("logits", F, list(out))], inits)
    add("gemm-transA-5",
        unary("Gemm", {"transA": 5}, ["input", "w"], [init("w", W84.T)],
              (8, 8)), "any", ["/t/Gemm", "transA"])
    for label, alpha in (("nan", float("nan")), ("inf", float("inf"))):
        add(f"gemm-alpha-{label}",
            unary("Gemm", {"alpha": alpha}, ["input", "w"],
                  [init("w", W84)], (4, 4)), "error", ["/t/Gemm", "alpha"])
    add("gemm-bias-bad-shape",
        unary("Gemm", {}, ["input", "w", "c"],
              [init("w", W84), init("c", np.ones((3,), np.float32))],
              (4, 4)), "error", ["/t/Gemm"])
    for axis in (5, -10):
        add(f"softmax-axis-{axis}".replace("--", "-m"),
            unary("Softmax", {"axis": axis}), "error", ["/t/Softmax", "axis"])
    for perm, label in (([0, 0], "dup"), ([0], "short"), ([0, 5], "range"),
                        ([1, -1], "negative")):
        add(f"transpose-perm-{label}", unary("Transpose", {"perm": perm},
                                             out=(8, 4)),
            "error", ["/t/Transpose", "perm"])
    for shape, label in (([-1, -1], "two-minus-one"), ([0, 0, 0], "zero"),
                         ([-2, 16], "minus-two"), ([5, 7], "count"),
                         ([1 << 62, 1 << 62], "overflow")):
        add(f"reshape-{label}",
            unary("Reshape", {}, ["input", "shape"],
                  [init("shape", np.array(shape, np.int64))], (8, 4)),
            "error", ["/t/Reshape"])
    add("reshape-shape-float",
        unary("Reshape", {}, ["input", "shape"],
              [init("shape", np.array([8, 4], np.float32))], (8, 4)),
        "error", ["/t/Reshape", "shape"])
    add("reshape-shape-computed",
        unary("Reshape", {}, ["input", "input"], out=(8, 4)), "error",
        ["/t/Reshape", "shape"])
    add("concat-axis-range",
        unary("Concat", {"axis": 3}, ["input", "input"], out=(8, 8)),
        "error", ["/t/Concat", "axis"])
    add("concat-rank-mismatch",
        unary("Concat", {"axis": 0}, ["input", "x3"],
              [init("x3", np.ones((2, 4, 8), np.float32))], (8, 8)),
        "error", ["/t/Concat"])
    add("split-sizes-sum",
        model_of([node("Split", ["input", "sizes"], ["a", "b"], name="/t/Split",
                       axis=1)],
                 [tensor_info("input", F, [4, 8])],
                 [tensor_info("a", F, [4, 3])],
                 [init("sizes", np.array([3, 3], np.int64))]),
        "error", ["/t/Split"])
    add("split-negative",
        model_of([node("Split", ["input", "sizes"], ["a", "b"], name="/t/Split",
                       axis=1)],
                 [tensor_info("input", F, [4, 8])],
                 [tensor_info("a", F, [4, 10])],
                 [init("sizes", np.array([10, -2], np.int64))]),
        "error", ["/t/Split"])
    add("split-num-outputs-zero",
        model_of([node("Split", ["input"], ["a"], name="/t/Split", axis=1,
                       num_outputs=0)],
                 [tensor_info("input", F, [4, 8])],
                 [tensor_info("a", F, [4, 8])], opset=18),
        "error", ["/t/Split"])
    for idx, label in ((100, "high"), (-100, "low")):
        add(f"gather-index-{label}",
            unary("Gather", {"axis": 0}, ["w", "idx"],
                  [init("w", W84), init("idx", np.array([[0, idx]], np.int64))],
                  (1, 2, 4)), "error", ["/t/Gather", str(idx)])
    add("gather-axis-range",
        unary("Gather", {"axis": 4}, ["w", "idx"],
              [init("w", W84), init("idx", np.array([0], np.int64))], (1, 4)),
        "error", ["/t/Gather", "axis"])
    def slice_model(starts, ends, axes, steps):
        return unary("Slice", {}, ["input", "s", "e", "a", "st"],
                     [init("s", np.array(starts, np.int64)),
                      init("e", np.array(ends, np.int64)),
                      init("a", np.array(axes, np.int64)),
                      init("st", np.array(steps, np.int64))], (4, 4))
    add("slice-step-zero", slice_model([0], [4], [1], [0]), "error",
        ["/t/Slice", "step"])
    add("slice-axes-repeated", slice_model([0, 0], [4, 4], [1, 1], [1, 1]),
        "error", ["/t/Slice", "axes"])
    add("slice-huge-bounds",
        slice_model([-(1 << 62)], [1 << 62], [1], [1 << 62]), "any",
        ["/t/Slice", "'logits'"])
    add("slice-axis-range", slice_model([0], [4], [7], [1]), "error",
        ["/t/Slice", "ax"])
    for axes, label in (([1, 1], "dup"), ([9], "range")):
        add(f"unsqueeze-{label}",
            unary("Unsqueeze", {}, ["input", "axes"],
                  [init("axes", np.array(axes, np.int64))], (4, 1, 8)),
            "error", ["/t/Unsqueeze", "axes"])
    m = unary("LeakyRelu", {})
    a = m.graph.node[0].attribute.add()
    a.name, a.type = "alpha", onnx.AttributeProto.INTS
    a.ints.extend([1, 2])
    add("attr-wrong-type", m, "error", ["/t/LeakyRelu", "alpha"])
    m = unary("LeakyRelu", {})
    a = m.graph.node[0].attribute.add()
    a.name = "alpha"
    add("attr-no-type", m, "error", ["/t/LeakyRelu", "alpha"])
    m = unary("LeakyRelu", {})
    a = m.graph.node[0].attribute.add()
    a.type = onnx.AttributeProto.FLOAT
    a.f = 0.5
    add("attr-no-name", m, "any", ["/t/LeakyRelu"])
    for to, label in ((999, "999"), (TensorProto.STRING, "string")):
        add(f"cast-to-{label}", unary("Cast", {"to": to}), "error",
            ["/t/Cast", "to"])
    add("where-float-cond",
        unary("Where", {}, ["input", "input", "input"]), "error",
        ["/t/Where"])
    add("layernorm-axis-range",
        unary("LayerNormalization", {"axis": 4}, ["input", "g"],
              [init("g", np.ones((8,), np.float32))]), "error",
        ["/t/LayerNormalization", "axis"])
    add("layernorm-epsilon-negative",
        unary("LayerNormalization", {"epsilon": -1.0}, ["input", "g"],
              [init("g", np.ones((8,), np.float32))]), "error",
        ["/t/LayerNormalization", "epsilon"])
    add("layernorm-scale-shape",
        unary("LayerNormalization", {}, ["input", "g"],
              [init("g", np.ones((5,), np.float32))]), "error",
        ["/t/LayerNormalization"])
    add("reducemean-axes-range",
        unary("ReduceMean", {"axes": [7]}, out=(4, 1)), "error",
        ["/t/ReduceMean", "ax"])
    add("reducemean-axes-dup",
        unary("ReduceMean", {"axes": [1, 1]}, out=(4, 1)), "error",
        ["/t/ReduceMean", "ax"])
    add("constant-no-value",
        model_of([node("Constant", [], ["c"], name="/t/Constant"),
                  node("Add", ["input", "c"], ["logits"])],
                 [tensor_info("input", F, [4, 8])],
                 [tensor_info("logits", F, [4, 8])]),
        "error", ["/t/Constant"])
    add("constant-sparse",
        model_of([node("Constant", [], ["c"], name="/t/Constant",
                       sparse_value=helper.make_sparse_tensor(
                           helper.make_tensor("v", F, [1], [1.0]),
                           helper.make_tensor("i", TensorProto.INT64, [1],
                                              [0]), [8])),
                  node("Add", ["input", "c"], ["logits"])],
                 [tensor_info("input", F, [4, 8])],
                 [tensor_info("logits", F, [4, 8])]),
        "error", ["/t/Constant"])
    add("flatten-axis-range", unary("Flatten", {"axis": 5}, out=(4, 8)),
        "error", ["/t/Flatten", "axis"])
    add("sce-float-labels",
        model_of([node("MatMul", ["input", "w"], ["h"]),
                  node("SoftmaxCrossEntropyLoss", ["h", "labels"], ["loss"],
                       name="/t/SCE")],
                 [tensor_info("input", F, [4, 8]),
                  tensor_info("labels", F, [4])],
                 [tensor_info("loss", F, [])], [init("w", W84)]),
        "error", ["/t/SCE", "labels"])
    add("sce-weights",
        model_of([node("MatMul", ["input", "w"], ["h"]),
                  node("SoftmaxCrossEntropyLoss", ["h", "labels", "wt"],
                       ["loss"], name="/t/SCE")],
                 [tensor_info("input", F, [4, 8]),
                  tensor_info("labels", TensorProto.INT64, [4])],
                 [tensor_info("loss", F, [])],
                 [init("w", W84), init("wt", np.ones((4,), np.float32))]),
        "error", ["/t/SCE", "weight"])
    add("sce-reduction-none",
        model_of([node("MatMul", ["input", "w"], ["h"]),
                  node("SoftmaxCrossEntropyLoss", ["h", "labels"], ["loss"],
                       name="/t/SCE", reduction="none")],
                 [tensor_info("input", F, [4, 8]),
                  tensor_info("labels", TensorProto.INT64, [4])],
                 [tensor_info("loss", F, [4])], [init("w", W84)]),
        "error", ["/t/SCE", "reduction"])
    add("sce-ignore-index",
        model_of([node("MatMul", ["input", "w"], ["h"]),
                  node("SoftmaxCrossEntropyLoss", ["h", "labels"], ["loss"],
                       name="/t/SCE", ignore_index=2)],
                 [tensor_info("input", F, [4, 8]),
                  tensor_info("labels", TensorProto.INT64, [4])],
                 [tensor_info("loss", F, [])], [init("w", W84)]),
        "any", ["/t/SCE", "ignore_index"])
    # Nested subgraph attributes past protobuf's recursion limit.
    leaf = helper.make_graph([], "leaf", [], [])
    g = leaf
    for i in range(120):
        n = helper.make_node("If", ["c"], [], name=f"/if{i}",
                             then_branch=g, else_branch=leaf)
        g = helper.make_graph([n], f"g{i}", [], [])
    nodes = [node("MatMul", ["input", "w"], ["h"]), g.node[0],
             node("Relu", ["h"], ["logits"])]
    add("subgraph-deep", mm_graph(nodes=nodes), "error", ["If", "valid"])


# ---------------------------------------------------------------------------
# Convolution, pooling, batch norm, Pad and Dropout with odd attributes.
# ---------------------------------------------------------------------------

N, C, H, W = 2, 2, 6, 6
CLASSES = 3


def conv_ref(x, w, b, strides, pads, dil, group):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]))
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    eh, ew = dil[0] * (kh - 1) + 1, dil[1] * (kw - 1) + 1
    oh = (xp.shape[2] - eh) // strides[0] + 1
    ow = (xp.shape[3] - ew) // strides[1] + 1
    if oh < 1 or ow < 1:
        return None
    y = np.zeros((n, o, oh, ow))
    opg = o // group
    for oc in range(o):
        g = oc // opg
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i * strides[0]:i * strides[0] + eh:dil[0],
                           j * strides[1]:j * strides[1] + ew:dil[1]]
                y[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
        if b is not None:
            y[:, oc] += b[oc]
    return y


def auto_pads(attrs, h, kernel, strides, dil, pads):
    """The pads ONNX's auto_pad gives (VALID: none; SAME_*: output
    ceil(in / stride), the odd one at the end or the beginning)."""
    mode = attrs.get("auto_pad", "NOTSET")
    if mode == "NOTSET":
        return pads
    out = [0, 0, 0, 0]
    if mode == "VALID":
        return out
    for d in range(2):
        size = h.shape[2 + d]
        o = -(-size // strides[d])
        total = max(0, (o - 1) * strides[d] + dil[d] * (kernel[d] - 1) + 1 -
                    size)
        small, large = total // 2, total - total // 2
        out[d], out[d + 2] = ((small, large) if mode == "SAME_UPPER"
                              else (large, small))
    return out


def pool_out(size, k, s, pb, pe, d, ceil):
    ext = d * (k - 1) + 1
    num = size + pb + pe - ext
    if num < 0:
        return 0
    out = (-(-num // s) if ceil else num // s) + 1
    if ceil and (out - 1) * s >= size + pb:
        out -= 1
    return out


def pool_ref(x, kind, k, s, pads, d, ceil, cip=False):
    n, c, h, w = x.shape
    oh = pool_out(h, k[0], s[0], pads[0], pads[2], d[0], ceil)
    ow = pool_out(w, k[1], s[1], pads[1], pads[3], d[1], ceil)
    if oh < 1 or ow < 1:
        return None
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = [i * s[0] - pads[0] + a * d[0] for a in range(k[0])]
            cols = [j * s[1] - pads[1] + a * d[1] for a in range(k[1])]
            vr = [r for r in rows if 0 <= r < h]
            vc = [q for q in cols if 0 <= q < w]
            if kind == "max":
                if not vr or not vc:
                    return "empty"
                y[:, :, i, j] = x[:, :, vr][:, :, :, vc].max(axis=(2, 3))
            else:
                if not vr or not vc:
                    return "empty"
                total = x[:, :, vr][:, :, :, vc].sum(axis=(2, 3))
                if cip:
                    inr = [r for r in rows if -pads[0] <= r < h + pads[2]]
                    inc = [q for q in cols if -pads[1] <= q < w + pads[3]]
                    count = len(inr) * len(inc)
                else:
                    count = len(vr) * len(vc)
                y[:, :, i, j] = total / count
    return y


def bn_ref(x, scale, bias, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    shape = [1, -1] + [1] * (x.ndim - 2)
    return ((x - mean) / np.sqrt(var + eps) * scale.reshape(shape) +
            bias.reshape(shape))


def cross_entropy(logits, labels):
    m = logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(axis=1)) + m[:, 0]
    return float(np.mean(lse - logits[np.arange(len(labels)), labels]))


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = tensors[name]
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[a.dtype]
        data = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def cnn_case(name, op_nodes, op_out_shape_fn, params, expect, names,
             forward, in_shape=(N, C, H, W), opset=17):
    """input -> Conv w0 (3x3, pad 1) -> op -> Flatten -> Gemm -> logits.

    `forward(params, h)` is numpy's op on the conv's output (None when the
    op is invalid, "empty" for a window with nothing to pool);
    `op_nodes` read "h" and write "y"."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    cin = in_shape[1]
    p = {"w0": rng.standard_normal((C, cin, 3, 3)) * 0.4}
    p.update({k: np.asarray(v, np.float64) for k, v in params.items()})
    x = rng.standard_normal(in_shape)
    labels = rng.integers(0, CLASSES, in_shape[0])

    def body(q, x):
        h = conv_ref(x, q["w0"], None, (1, 1), (1, 1, 1, 1), (1, 1), 1)
        return forward(q, h)

    y = body(p, x)
    compare = True
    if isinstance(y, tuple):  # ("nocompare", y): random, shape only
        compare, y = False, y[1]
    valid = isinstance(y, np.ndarray)
    feat = int(np.prod(y.shape[1:])) if valid else 4
    p["fc.w"] = rng.standard_normal((CLASSES, feat)) * 0.3
    p["fc.b"] = rng.standard_normal((CLASSES,)) * 0.1
    inits = [init(k, v.astype(np.float32)) for k, v in p.items()]
    nodes = [node("Conv", ["input", "w0"], ["h"], name="/conv0/Conv",
                  pads=[1, 1, 1, 1], kernel_shape=[3, 3])]
    nodes += op_nodes
    nodes += [node("Flatten", ["y"], ["f"], name="/flat/Flatten", axis=1),
              node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="/fc/Gemm",
                   transB=1)]
    model = model_of(nodes, [tensor_info("input", F, list(in_shape))],
                     [tensor_info("logits", F, [in_shape[0], CLASSES])],
                     inits, opset=opset)
    if not valid or expect == "error":
        add(name, model, "error" if not valid else expect, names)
        return
    x32 = x.astype(np.float32)
    data = os.path.join(OUT, name + ".data.safetensors")
    write_safetensors(data, {"input": x32, "labels": labels.astype(np.int64)})
    if not compare:
        add(name, model, expect, names,
            train={"data": data, "batch": in_shape[0]})
        return
    # Float64 loss and its gradients by central differences, from the
    # float32 values gpipe starts from.
    p32 = {k: v.astype(np.float32).astype(np.float64) for k, v in p.items()}

    def loss_of(q):
        h = body(q, x32.astype(np.float64))
        logits = h.reshape(h.shape[0], -1) @ q["fc.w"].T + q["fc.b"]
        return cross_entropy(logits, labels)

    loss = loss_of(p32)
    grads = {}
    for k in p32:
        if k.startswith("bn.mean") or k.startswith("bn.var"):
            continue
        # At most 6 elements of each tensor, spread over it.
        flat = p32[k].reshape(-1)
        picked = {}
        for i in sorted(set(np.linspace(0, flat.size - 1, 6).astype(int))):
            keep = flat[i]
            flat[i] = keep + 1e-5
            up = loss_of(p32)
            flat[i] = keep - 1e-5
            down = loss_of(p32)
            flat[i] = keep
            picked[str(i)] = (up - down) / 2e-5
        grads[k] = picked
    add(name, model, expect, names,
        train={"data": data, "batch": in_shape[0], "loss": loss,
               "grads": grads})


def conv_cases():
    def conv(name, expect, names, attrs, wshape=(3, C, 3, 3), bias=None,
             group=1):
        params = {"w1": np.random.default_rng(5).standard_normal(wshape) *
                  0.3}
        ins = ["h", "w1"]
        if bias is not None:
            params["b1"] = np.asarray(bias, np.float64)
            ins.append("b1")
        a = dict(attrs)
        if group != 1:
            a["group"] = group
        strides = a.get("strides", [1, 1])
        pads = a.get("pads", [0, 0, 0, 0])
        dil = a.get("dilations", [1, 1])

        def fwd(q, h):
            if (len(strides) != 2 or len(pads) != 4 or len(dil) != 2 or
                    min(strides) < 1 or min(dil) < 1 or min(pads) < 0 or
                    max(pads) > 1000 or
                    group < 1 or h.shape[1] % group or
                    wshape[0] % group or wshape[1] * group != h.shape[1] or
                    a.get("auto_pad", "NOTSET") not in
                    ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER") or
                    "kernel_shape" in a and
                    list(a["kernel_shape"]) != list(wshape[2:]) or
                    bias is not None and len(bias) != wshape[0]):
                return None
            return conv_ref(h, q["w1"], q.get("b1"), strides,
                            auto_pads(a, h, wshape[2:], strides, dil, pads),
                            dil, group)
        cnn_case(name, [node("Conv", ins, ["y"], name="/t/Conv", **a)], None,
                 params, expect, names, fwd)
    conv("conv-stride-zero", "error", ["/t/Conv", "stride"],
         {"strides": [0, 1]})
    conv("conv-stride-negative", "error", ["/t/Conv", "stride"],
         {"strides": [-1, 1]})
    conv("conv-stride-short", "error", ["/t/Conv", "stride"],
         {"strides": [1]})
    conv("conv-stride-long", "error", ["/t/Conv", "stride"],
         {"strides": [1, 1, 1]})
    conv("conv-stride-huge", "any", ["/t/Conv", "stride"],
         {"strides": [1 << 62, 1]})
    conv("conv-stride-past-input", "any", ["/t/Conv"], {"strides": [9, 9]})
    conv("conv-kernel-larger", "error", ["/t/Conv"], {},
         wshape=(3, C, 9, 9))
    conv("conv-kernel-larger-padded", "any", ["/t/Conv"],
         {"pads": [2, 2, 2, 2]}, wshape=(3, C, 9, 9))
    conv("conv-groups-zero", "error", ["/t/Conv", "group"], {}, group=0)
    conv("conv-groups-negative", "error", ["/t/Conv", "group"], {},
         group=-2)
    conv("conv-groups-not-dividing", "error", ["/t/Conv", "group"], {},
         wshape=(3, 1, 3, 3), group=2)
    conv("conv-groups-two", "any", ["/t/Conv"], {}, wshape=(4, 1, 3, 3),
         group=2)
    conv("conv-weight-channels", "error", ["/t/Conv"], {},
         wshape=(3, 5, 3, 3))
    conv("conv-pads-asymmetric", "any", ["/t/Conv"],
         {"pads": [0, 1, 2, 0]})
    conv("conv-pads-negative", "error", ["/t/Conv", "pad"],
         {"pads": [-1, 0, 0, 0]})
    conv("conv-pads-short", "error", ["/t/Conv", "pad"], {"pads": [1, 1]})
    conv("conv-pads-huge", "error", ["/t/Conv", "/fc/Gemm"],
         {"pads": [1 << 40, 0, 0, 0]})
    conv("conv-dilations", "any", ["/t/Conv"], {"dilations": [2, 2]})
    conv("conv-dilations-asymmetric", "any", ["/t/Conv"],
         {"dilations": [1, 2], "strides": [2, 1], "pads": [1, 0, 0, 1]})
    conv("conv-dilations-zero", "error", ["/t/Conv", "dilation"],
         {"dilations": [0, 1]})
    conv("conv-dilations-negative", "error", ["/t/Conv", "dilation"],
         {"dilations": [-2, 1]})
    conv("conv-dilations-past-input", "error", ["/t/Conv"],
         {"dilations": [5, 5]})
    conv("conv-auto-pad-same-upper", "any", ["/t/Conv"],
         {"auto_pad": "SAME_UPPER"})
    conv("conv-auto-pad-valid", "any", ["/t/Conv"], {"auto_pad": "VALID"})
    conv("conv-auto-pad-bogus", "error", ["/t/Conv", "auto_pad"],
         {"auto_pad": "BOGUS"})
    conv("conv-auto-pad-with-pads", "any", ["/t/Conv"],
         {"auto_pad": "VALID", "pads": [1, 1, 1, 1]})
    conv("conv-kernel-shape-mismatch", "error", ["/t/Conv", "kernel"],
         {"kernel_shape": [5, 5]})
    conv("conv-bias-size", "error", ["/t/Conv"], {}, bias=[0.1, 0.2])
    conv("conv-bias", "any", ["/t/Conv"], {}, bias=[0.1, -0.2, 0.3])
    conv("conv-ceil-mode", "error", ["/t/Conv", "ceil_mode"],
         {"ceil_mode": 1})
    conv("conv-strides-and-pads", "any", ["/t/Conv"],
         {"strides": [2, 3], "pads": [1, 2, 0, 1]})
    # 3-D convolution and a computed weight.
    add("conv-3d", model_of(
        [node("Conv", ["input", "w"], ["logits"], name="/t/Conv")],
        [tensor_info("input", F, [2, 2, 4, 4, 4])],
        [tensor_info("logits", F, [2, 3, 2, 2, 2])],
        [init("w", np.ones((3, 2, 3, 3, 3), np.float32))]), "error",
        ["/t/Conv"])
    add("conv-weight-computed", model_of(
        [node("Relu", ["input"], ["wr"]),
         node("Conv", ["input", "wr"], ["logits"], name="/t/Conv")],
        [tensor_info("input", F, [2, 2, 3, 3])],
        [tensor_info("logits", F, [2, 2, 1, 1])]), "any", ["/t/Conv"])


def pool_cases():
    def pool(name, kind, expect, names, attrs, opset=17):
        op = "MaxPool" if kind == "max" else "AveragePool"
        k = attrs.get("kernel_shape")
        s = attrs.get("strides", [1, 1])
        pads = attrs.get("pads", [0, 0, 0, 0])
        d = attrs.get("dilations", [1, 1])
        ceil = attrs.get("ceil_mode", 0)
        cip = attrs.get("count_include_pad", 0)

        def fwd(q, h):
            if (k is None or len(k) != 2 or min(k) < 1 or len(s) != 2 or
                    min(s) < 1 or len(pads) != 4 or min(pads) < 0 or
                    len(d) != 2 or min(d) < 1 or
                    kind == "avg" and d != [1, 1] or
                    attrs.get("storage_order", 0) not in (0, 1)):
                return None
            return pool_ref(h, kind, k, s, auto_pads(attrs, h, k, s, d, pads),
                            d, ceil, cip)
        cnn_case(name, [node(op, ["h"], ["y"], name="/t/" + op, **attrs)],
                 None, {}, expect, names, fwd, opset=opset)
    for kind in ("max", "avg"):
        p = kind + "pool"
        nm = "/t/MaxPool" if kind == "max" else "/t/AveragePool"
        pool(f"{p}-no-kernel", kind, "error", [nm, "kernel"], {})
        pool(f"{p}-kernel-zero", kind, "error", [nm, "kernel"],
             {"kernel_shape": [0, 2]})
        pool(f"{p}-kernel-negative", kind, "error", [nm, "kernel"],
             {"kernel_shape": [-2, 2]})
        pool(f"{p}-stride-zero", kind, "error", [nm, "stride"],
             {"kernel_shape": [2, 2], "strides": [0, 2]})
        pool(f"{p}-kernel-larger", kind, "error", [nm],
             {"kernel_shape": [9, 9]})
        pool(f"{p}-kernel-larger-padded", kind, "any", [nm],
             {"kernel_shape": [7, 7], "pads": [1, 1, 1, 1]})
        pool(f"{p}-ceil", kind, "any", [nm],
             {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1})
        pool(f"{p}-ceil-padded", kind, "any", [nm],
             {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1,
              "pads": [1, 1, 1, 1]})
        pool(f"{p}-ceil-last-window-in-pad", kind, "any", [nm],
             {"kernel_shape": [2, 2], "strides": [3, 3], "ceil_mode": 1,
              "pads": [0, 0, 1, 1]})
        pool(f"{p}-pads-asymmetric", kind, "any", [nm],
             {"kernel_shape": [3, 2], "strides": [2, 1],
              "pads": [1, 0, 0, 1]})
        pool(f"{p}-pads-not-below-kernel", kind, "any", [nm, "pad"],
             {"kernel_shape": [2, 2], "strides": [1, 1],
              "pads": [3, 3, 3, 3]})
        pool(f"{p}-pads-equal-kernel", kind, "any", [nm, "pad"],
             {"kernel_shape": [2, 2], "strides": [2, 2],
              "pads": [2, 2, 2, 2]})
        pool(f"{p}-pads-negative", kind, "error", [nm, "pad"],
             {"kernel_shape": [2, 2], "pads": [-1, 0, 0, 0]})
        pool(f"{p}-dilations", kind, "any", [nm],
             {"kernel_shape": [2, 2], "dilations": [2, 2]}, opset=19)
        pool(f"{p}-auto-pad-same-lower", kind, "any", [nm],
             {"kernel_shape": [3, 3], "strides": [2, 2],
              "auto_pad": "SAME_LOWER"})
    pool("avgpool-count-include-pad", "avg", "any", ["/t/AveragePool"],
         {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
          "count_include_pad": 1})
    pool("avgpool-count-include-pad-ceil", "avg", "any", ["/t/AveragePool"],
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
          "count_include_pad": 1, "ceil_mode": 1})
    pool("maxpool-storage-order", "max", "any",
         ["/t/MaxPool", "storage_order"],
         {"kernel_shape": [2, 2], "storage_order": 1})
    add("maxpool-indices-used", model_of(
        [node("MaxPool", ["input"], ["y", "idx"], name="/t/MaxPool",
              kernel_shape=[2, 2]),
         node("Cast", ["idx"], ["logits"], to=F)],
        [tensor_info("input", F, [2, 2, 4, 4])],
        [tensor_info("logits", F, [2, 2, 3, 3])]), "error",
        ["/t/MaxPool", "Indices"])
    add("globalavgpool-3d", model_of(
        [node("GlobalAveragePool", ["input"], ["logits"], name="/t/GAP")],
        [tensor_info("input", F, [2, 4, 5])],
        [tensor_info("logits", F, [2, 4, 1])]), "any", ["/t/GAP"])


def bn_cases():
    def bn(name, expect, names, attrs, cshape=(C,), x2d=False, outputs=1,
           opset=17):
        params = {"bn.scale": np.linspace(0.5, 1.5, cshape[0]),
                  "bn.bias": np.linspace(-0.2, 0.2, cshape[0]),
                  "bn.mean": np.zeros(cshape), "bn.var": np.ones(cshape)}
        eps = attrs.get("epsilon", 1e-5)
        mom = attrs.get("momentum", 0.9)
        outs = ["y"] + [f"bn_out{i}" for i in range(1, outputs)]

        def fwd(q, h):
            if (cshape[0] != h.shape[1] or not (0 <= mom <= 1) or
                    not eps > 0 or attrs.get("training_mode", 1) == 0):
                return None
            return bn_ref(h, q["bn.scale"], q["bn.bias"], eps)
        a = {"training_mode": 1}
        a.update(attrs)
        if opset < 14:
            a.pop("training_mode", None)
        cnn_case(name, [node("BatchNormalization",
                             ["h", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                             outs, name="/t/BatchNormalization", **a)],
                 None, params, expect, names, fwd, opset=opset)
    bn("bn-ok", "any", ["/t/BatchNormalization"], {})
    bn("bn-epsilon-negative", "error", ["/t/BatchNormalization", "epsilon"],
       {"epsilon": -1.0})
    bn("bn-epsilon-zero", "any", ["/t/BatchNormalization", "epsilon"],
       {"epsilon": 0.0})
    bn("bn-epsilon-nan", "error", ["/t/BatchNormalization", "epsilon"],
       {"epsilon": float("nan")})
    bn("bn-momentum-two", "error", ["/t/BatchNormalization", "momentum"],
       {"momentum": 2.0})
    bn("bn-momentum-negative", "error", ["/t/BatchNormalization", "momentum"],
       {"momentum": -0.5})
    bn("bn-scale-shape", "error", ["/t/BatchNormalization"], {},
       cshape=(3,))
    bn("bn-inference", "error", ["/t/BatchNormalization"],
       {"training_mode": 0})
    bn("bn-three-outputs", "any", ["/t/BatchNormalization"], {}, outputs=3)
    bn("bn-opset9-outputs", "any", ["/t/BatchNormalization"], {},
       outputs=5, opset=9)
    bn("bn-opset7-spatial0", "any", ["/t/BatchNormalization", "spatial"],
       {"spatial": 0}, outputs=5, opset=7)
    # A 2-D batch norm ([N, C]), a batch of one, a computed running mean.
    add("bn-2d", model_of(
        [node("BatchNormalization", ["input", "s", "b", "m", "v"], ["logits"],
              name="/t/BatchNormalization", training_mode=1)],
        [tensor_info("input", F, [4, 3])], [tensor_info("logits", F, [4, 3])],
        [init("s", np.ones(3, np.float32)), init("b", np.zeros(3, np.float32)),
         init("m", np.zeros(3, np.float32)), init("v", np.ones(3, np.float32))]),
        "any", ["/t/BatchNormalization"])
    add("bn-computed-mean", model_of(
        [node("Relu", ["m"], ["mr"]),
         node("BatchNormalization", ["input", "s", "b", "mr", "v"],
              ["logits"], name="/t/BatchNormalization", training_mode=1)],
        [tensor_info("input", F, [4, 3, 2, 2])],
        [tensor_info("logits", F, [4, 3, 2, 2])],
        [init("s", np.ones(3, np.float32)), init("b", np.zeros(3, np.float32)),
         init("m", np.zeros(3, np.float32)), init("v", np.ones(3, np.float32))]),
        "error", ["/t/BatchNormalization", "running mean"])


def pad_dropout_cases():
    def pad(name, expect, names, pads, mode=None, value=None, axes=None,
            opset=17):
        ins = ["h", "pads"]
        params = {}
        inits = [init("pads", np.array(pads, np.int64))]
        if value is not None or axes is not None:
            ins.append("cv" if value is not None else "")
            if value is not None:
                inits.append(init("cv", np.array(value, np.float32)))
        if axes is not None:
            ins.append("axes")
            inits.append(init("axes", np.array(axes, np.int64)))
        attrs = {"mode": mode} if mode else {}
        nodes = [node("Pad", ins, ["y"], name="/t/Pad", **attrs)]
        # The initializers of the Pad are not parameters: put them in the
        # model by hand after cnn_case built it.

        def fwd(q, h):
            if len(pads) != 8 or any(pads) or mode not in (
                    None, "constant", "edge", "reflect", "wrap"):
                return None
            return h
        cnn_case(name, nodes, None, params, expect, names, fwd, opset=opset)
        m = onnx.load(CASES[-1]["file"])
        m.graph.initializer.extend(inits)
        onnx.save(m, CASES[-1]["file"])
    pad("pad-zero", "any", ["/t/Pad"], [0] * 8)
    # Reflect, wrap and negative (cropping) pads import; the case's Gemm
    # keeps the unpadded width, so the error is the Gemm's, downstream.
    grown = ["/t/Pad", "/fc/Gemm"]
    pad("pad-reflect", "error", grown, [0, 0, 1, 1, 0, 0, 1, 1],
        mode="reflect")
    pad("pad-edge-zero", "any", ["/t/Pad"], [0] * 8, mode="edge")
    pad("pad-wrap", "error", grown, [0, 0, 1, 1, 0, 0, 1, 1],
        mode="wrap", opset=19)
    pad("pad-negative", "error", grown, [0, 0, -1, 0, 0, 0, 0, 0])
    pad("pad-wrong-length", "error", ["/t/Pad", "pad"], [0, 0, 1])
    pad("pad-value-nonzero", "any", ["/t/Pad"], [0] * 8, value=5.0)
    pad("pad-axes", "error", ["/t/Pad"], [1, 1], axes=[2, 3], opset=18)
    pad("pad-bogus-mode", "error", ["/t/Pad", "mode"], [0] * 8,
        mode="bogus")

    def dropout(name, expect, names, ratio=None, training=True, attrs=None,
                opset=17, mask=False):
        ins = ["h"]
        inits = []
        if ratio is not None or training is not None:
            ins.append("ratio" if ratio is not None else "")
            if ratio is not None:
                inits.append(init("ratio", np.array(ratio, np.float32)))
        if training is not None:
            ins.append("tm")
            inits.append(init("tm", np.array(training, np.bool_)))
        if opset < 12:
            ins = ["h"]
            inits = []
        outs = ["y", "mask"] if mask else ["y"]
        nodes = [node("Dropout", ins, outs, name="/t/Dropout",
                      **(attrs or {}))]

        def fwd(q, h):
            r = 0.5 if ratio is None else ratio
            if not (0 <= r < 1) or mask:
                return None
            if training and r != 0:
                return ("nocompare", h)  # a random mask
            return h
        cnn_case(name, nodes, None, {}, expect, names, fwd, opset=opset)
        m = onnx.load(CASES[-1]["file"])
        m.graph.initializer.extend(inits)
        onnx.save(m, CASES[-1]["file"])
        if CASES[-1]["expect"] == "error" and expect == "any":
            CASES[-1]["expect"] = "any"
    dropout("dropout-ratio-above-one", "error", ["/t/Dropout", "ratio"],
            ratio=1.5)
    dropout("dropout-ratio-one", "error", ["/t/Dropout", "ratio"], ratio=1.0)
    dropout("dropout-ratio-negative", "error", ["/t/Dropout", "ratio"],
            ratio=-0.1)
    dropout("dropout-ratio-nan", "error", ["/t/Dropout", "ratio"],
            ratio=float("nan"))
    dropout("dropout-ratio-zero", "any", ["/t/Dropout"], ratio=0.0)
    dropout("dropout-inference", "any", ["/t/Dropout"], ratio=0.5,
            training=False)
    dropout("dropout-no-training-input", "any", ["/t/Dropout"],
            ratio=0.5, training=None)
    dropout("dropout-seed", "any", ["/t/Dropout"], ratio=0.5,
            attrs={"seed": 7})
    dropout("dropout-mask-output", "any", ["/t/Dropout", "mask"], ratio=0.3,
            mask=True)
    dropout("dropout-opset7-is-test", "any", ["/t/Dropout"], training=None,
            attrs={"is_test": 0, "ratio": 0.3}, opset=7)
    # A ratio computed from the input.
    add("dropout-ratio-computed", model_of(
        [node("ReduceMean", ["input"], ["r"], keepdims=0),
         node("Dropout", ["input", "r", "tm"], ["logits"], name="/t/Dropout")],
        [tensor_info("input", F, [4, 8])], [tensor_info("logits", F, [4, 8])],
        [init("tm", np.array(True))]), "error", ["/t/Dropout", "ratio"])


def protobuf_cases():
    base = mm_graph().SerializeToString()
    add("pb-empty", None, "error", ["valid ONNX", "empty"], raw=b"")
    add("pb-one-byte", None, "error", ["valid ONNX"], raw=b"\x08")
    for pct in (10, 33, 50, 77, 95, 99):
        add(f"pb-truncated-{pct}", None, "error", ["valid ONNX", "truncated"],
            raw=base[:len(base) * pct // 100])
    rng = np.random.default_rng(11)
    for i in range(8):
        b = bytearray(base)
        for _ in range(3):
            at = int(rng.integers(0, len(b)))
            b[at] ^= 1 << int(rng.integers(0, 8))
        add(f"pb-bitflip-{i}", None, "any", ["onnx", "ONNX", "node", "'"],
            raw=bytes(b))
    add("pb-random", None, "error", ["valid ONNX"],
        raw=bytes(rng.integers(0, 256, 1024, dtype=np.uint8)))
    # ModelProto field 7 (graph), length-delimited, with a 2^62 length.
    add("pb-huge-length", None, "error", ["valid ONNX"],
        raw=b"\x08\x08\x3a" + bytes([0xff] * 8) + b"\x3f" + b"\0" * 16)
    add("pb-no-graph", None, "error", ["graph", "output", "layer"],
        raw=b"\x08\x08")
    add("pb-mlir-text", None, "error", ["valid ONNX"],
        raw=b"func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            b"  return %x : tensor<4xf32>\n}\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    protobuf_cases()
    graph_cases()
    conv_cases()
    pool_cases()
    bn_cases()
    pad_dropout_cases()
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(CASES, f, indent=1)
    print(f"adversarial-onnx: {len(CASES)} models in {OUT}")


if __name__ == "__main__":
    main()
