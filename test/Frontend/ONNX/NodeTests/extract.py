#!/usr/bin/env python3
#===- extract.py - Pick ONNX's backend node tests gpipe can run ------------===#
#
# Usage: extract.py [--out DIR] [--max-bytes N]
#
# Reads the node tests that ship with the `onnx` package
# (onnx.backend.test.case.node.collect_testcases) and keeps the ones gpipe's
# importer can take: every node of the default domain and of an op type
# listed in lib/Frontend/ONNX/ONNXOps.def, every graph input and output a
# tensor of float32, float64, int64, int32 or bool with a static shape, and
# less than --max-bytes (64 KiB) of input and output data. A case
# "*_expanded*" (the op's function body written out as primitive ops) counts
# under the op it expands, and is kept when every op of its body is
# supported too. Loss nodes (NegativeLogLikelihoodLoss,
# SoftmaxCrossEntropyLoss) are left out: gpipe imports them only as a
# graph's training objective, whose function returns the scores rather than
# the loss.
#
# Two changes adapt a case to an importer of static shapes, opsets 7 to 20,
# without changing what it computes:
#
# - Its opset is moved into 7..20 when the ops mean the same there: raised
#   only when every node's definition is the same at both opsets; lowered
#   (ONNX's current tests are written at opsets 21 to 25 and more) when every
#   node's older definition has the same inputs, outputs and used attributes
#   and the lowered model passes onnx.checker's full check (its element types
#   are allowed there): the newer definitions of gpipe's ops only add element
#   types (bfloat16, 4-bit and 8-bit floats and integers). Other cases are
#   skipped.
# - The inputs listed in STATIC_INPUTS (axes, shapes, split sizes, pads,
#   Clip's bounds, Dropout's ratio: values older opsets took as attributes,
#   or that fix the output's shape; a BatchNormalization's weights and
#   running statistics) become initializers holding the case's data, as a
#   model exporter writes them: gpipe needs them so.
#
# Training-mode Dropout cases with a nonzero ratio are left out: ONNX's
# expected values come from numpy's random generator.
#
# Each kept case becomes DIR/<name>/model.onnx and DIR/<name>/data.safetensors
# (the first data set: the remaining inputs as "in.<graph input name>", the
# expected outputs as "out.<graph output name>"; the metadata "inputs" and
# "outputs" hold the graph's input and output names in order, as JSON lists),
# and DIR/INDEX lists "<name> <op type>" sorted by name. The previous
# contents of DIR are replaced. The output is deterministic for a given
# `onnx` version. Prints a table of kept and skipped cases per supported op
# type, with the reasons for skipping.
#
#===----------------------------------------------------------------------===#
import argparse
import collections
import copy
import json
import os
import re
import shutil
import struct
import sys
import warnings

import numpy as np
import onnx
import onnx.checker
import onnx.defs
import onnx.numpy_helper
from onnx import TensorProto
from onnx.backend.test.case.node import collect_testcases

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
OPS_DEF = os.path.join(SRC_ROOT, "lib", "Frontend", "ONNX", "ONNXOps.def")

# The default-domain opsets gpipe's importer reads.
MIN_OPSET, MAX_OPSET = 7, 20

# ONNX element type -> (numpy dtype, safetensors dtype).
ELEMENT_TYPES = {
    TensorProto.FLOAT: (np.float32, "F32"),
    TensorProto.DOUBLE: (np.float64, "F64"),
    TensorProto.INT64: (np.int64, "I64"),
    TensorProto.INT32: (np.int32, "I32"),
    TensorProto.BOOL: (np.bool_, "BOOL"),
}

# Loss nodes gpipe imports only as the graph's training objective: the
# imported function returns the scores the loss is taken of (the target
# becomes the labels), never the loss value a node test expects.
LOSS_OPS = {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}

# Inputs (by their name in the op's schema) given as initializers: values
# that older opsets took as attributes, or that fix the shape of the result;
# and a BatchNormalization's weights and running statistics, which a model
# stores as initializers (gpipe needs them so: they are its parameters).
STATIC_INPUTS = {
    "BatchNormalization": {"scale", "B", "input_mean", "input_var"},
    "Clip": {"min", "max"},
    "ConstantOfShape": {"input"},
    "CumSum": {"axis"},
    "Dropout": {"ratio", "training_mode"},
    "Expand": {"shape"},
    "Pad": {"pads", "constant_value", "axes"},
    "Range": {"start", "limit", "delta"},
    "ReduceMean": {"axes"},
    "ReduceSum": {"axes"},
    "Reshape": {"shape"},
    "Slice": {"starts", "ends", "axes", "steps"},
    "Split": {"split"},
    "Squeeze": {"axes"},
    "Trilu": {"k"},
    "Unsqueeze": {"axes"},
}


def supported_ops():
    ops = set()
    with open(OPS_DEF) as f:
        for line in f:
            m = re.match(r"\s*ONNX_OP\(\s*(\w+)\s*,", line)
            if m:
                ops.add(m.group(1))
    if not ops:
        sys.exit("extract.py: no ONNX_OP lines in " + OPS_DEF)
    return ops


def base_name(name):
    """The case a "*_expanded*" case expands ("test_x_expanded_ver18" ->
    "test_x"), or None."""
    m = re.match(r"(.*)_expanded(_ver\d+)?$", name)
    return m.group(1) if m else None


def as_array(value):
    """A data set's value as a numpy array (numpy scalars and TensorProtos
    converted), or the value itself when it is not a tensor."""
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, TensorProto):
        if value.data_type not in ELEMENT_TYPES:
            return value
        return onnx.numpy_helper.to_array(value)
    return value


def value_problem(info, array, what):
    """Why graph value `info` (with data `array`) cannot be used, or None."""
    if not info.type.HasField("tensor_type"):
        return "%s is not a tensor" % what
    tensor = info.type.tensor_type
    if tensor.elem_type not in ELEMENT_TYPES:
        return "%s element type %s" % (
            what, TensorProto.DataType.Name(tensor.elem_type).lower())
    if not tensor.HasField("shape"):
        return "%s without a static shape" % what
    if any(not d.HasField("dim_value") for d in tensor.shape.dim):
        return "%s without a static shape" % what
    shape = tuple(d.dim_value for d in tensor.shape.dim)
    if not isinstance(array, np.ndarray):
        return "%s data is not an array" % what
    if array.dtype != ELEMENT_TYPES[tensor.elem_type][0]:
        return "%s data is %s, not %s" % (
            what, array.dtype, TensorProto.DataType.Name(tensor.elem_type))
    if array.shape != shape:
        return "%s data has another shape than declared" % what
    return None


def default_opset(model):
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return None


def schema(op, opset):
    try:
        return onnx.defs.get_schema(op, opset)
    except onnx.defs.SchemaError:
        return None


def same_interface(node, old, new):
    """Whether `node` means the same under schema `old` as under `new`
    (apart from the element types each allows)."""
    formals = lambda s: [(f.name, f.option) for f in s.inputs]
    results = lambda s: [(f.name, f.option) for f in s.outputs]
    if formals(old) != formals(new) or results(old) != results(new):
        return False
    for attr in node.attribute:
        if attr.name not in old.attributes or attr.name not in new.attributes:
            return False
        if old.attributes[attr.name].type != new.attributes[attr.name].type:
            return False
    return all(old.attributes[a].default_value ==
               new.attributes[a].default_value
               for a in old.attributes if a in new.attributes)


def move_opset(model):
    """`model` at an opset gpipe reads, or the reason it cannot be moved."""
    opset = default_opset(model)
    if opset is None:
        return None, "imports no default-domain opset"
    if MIN_OPSET <= opset <= MAX_OPSET:
        return model, None
    target = min(max(opset, MIN_OPSET), MAX_OPSET)
    for node in model.graph.node:
        new, old = schema(node.op_type, opset), schema(node.op_type, target)
        if old is None:
            return None, "opset %d: %s is newer than opset %d" % (
                opset, node.op_type, target)
        if new is None:
            return None, "opset %d: no schema for %s" % (opset, node.op_type)
        if old.since_version == new.since_version:
            continue
        if opset < target or not same_interface(node, old, new):
            return None, "opset %d: %s changed after opset %d" % (
                opset, node.op_type, target)
    moved = copy.deepcopy(model)
    for entry in moved.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = target
    try:
        onnx.checker.check_model(moved, full_check=True)
    except Exception:  # checker and shape-inference errors
        return None, "opset %d: fails onnx.checker at opset %d" % (opset,
                                                                   target)
    return moved, None


def random_dropout(model, inputs):
    """Whether `model` has a Dropout in training mode with a nonzero ratio,
    whose expected values come from numpy's random generator."""
    data = {i.name: a for i, a in zip(model.graph.input, inputs)}
    data.update({t.name: onnx.numpy_helper.to_array(t)
                 for t in model.graph.initializer})
    for node in model.graph.node:
        if node.op_type != "Dropout" or len(node.input) < 3:
            continue
        training = data.get(node.input[2])
        if training is None or not bool(training):
            continue
        ratio = data.get(node.input[1]) if node.input[1] else None
        if ratio is None or float(ratio) != 0.0:
            return True
    return False


def make_static(model, inputs):
    """Turns the graph inputs that STATIC_INPUTS names into initializers
    holding their data; returns the model and the remaining inputs
    ([(graph input name, array)])."""
    static = set()
    for node in model.graph.node:
        op_schema = schema(node.op_type, default_opset(model))
        names = STATIC_INPUTS.get(node.op_type, set())
        for i, value in enumerate(node.input):
            if op_schema is None or not value or not op_schema.inputs:
                continue
            formal = op_schema.inputs[min(i, len(op_schema.inputs) - 1)].name
            if formal in names:
                static.add(value)
    graph_inputs = [i.name for i in model.graph.input]
    static &= set(graph_inputs)
    # An input used both as a static operand and as data stays an input.
    for node in model.graph.node:
        op_schema = schema(node.op_type, default_opset(model))
        names = STATIC_INPUTS.get(node.op_type, set())
        for i, value in enumerate(node.input):
            formal = (op_schema.inputs[min(i, len(op_schema.inputs) - 1)].name
                      if op_schema is not None and op_schema.inputs else "")
            if value in static and formal not in names:
                static.discard(value)
    if not static:
        return model, list(zip(graph_inputs, inputs))
    model = copy.deepcopy(model)
    remaining = []
    kept_infos = []
    for info, array in zip(model.graph.input, inputs):
        if info.name in static:
            model.graph.initializer.append(
                onnx.numpy_helper.from_array(array, info.name))
        else:
            kept_infos.append(copy.deepcopy(info))
            remaining.append((info.name, array))
    del model.graph.input[:]
    model.graph.input.extend(kept_infos)
    return model, remaining


def write_safetensors(path, tensors, metadata):
    """Writes `tensors` ([(name, array)]) and `metadata` (a map of strings)
    in the standard layout: header padded with spaces to a multiple of 8,
    tensors sorted by name, data packed in that order."""
    header = {"__metadata__": metadata}
    chunks = []
    offset = 0
    for name, array in sorted(tensors, key=lambda t: t[0]):
        dtype = next(st for np_type, st in ELEMENT_TYPES.values()
                     if array.dtype == np_type)
        data = np.ascontiguousarray(array).astype(
            array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for chunk in chunks:
            f.write(chunk)


def main():
    parser = argparse.ArgumentParser(
        description="Pick ONNX node tests gpipe can run")
    parser.add_argument("--out", default=os.path.join(HERE, "cases"))
    parser.add_argument("--max-bytes", type=int, default=64 * 1024)
    args = parser.parse_args()

    ops = supported_ops()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    by_name = {case.name: case for case in cases}

    def op_type_of(case):
        base = base_name(case.name)
        if base is not None and base in by_name:
            nodes = by_name[base].model.graph.node
            if len(nodes) == 1:
                return nodes[0].op_type
        nodes = case.model.graph.node
        return nodes[0].op_type if nodes else "(none)"

    kept = []  # (name, op type, model, [(input, array)], [(output, array)])
    skipped = collections.defaultdict(collections.Counter)  # op -> reasons
    unsupported = collections.Counter()  # op type -> cases
    moved_opsets = collections.Counter()  # (from, to) -> cases
    made_static = 0
    for case in cases:
        op = op_type_of(case)
        graph = case.model.graph
        if op not in ops:
            unsupported[op] += 1
            continue

        def skip(reason):
            skipped[op][reason] += 1

        if op in LOSS_OPS:
            skip("a loss: gpipe imports it only as the training objective")
            continue
        foreign = [n for n in graph.node if n.domain not in ("", "ai.onnx")]
        if foreign:
            skip("domain " + foreign[0].domain)
            continue
        others = sorted({n.op_type for n in graph.node} - ops)
        if others:
            skip("uses unsupported " + ", ".join(others))
            continue
        if not case.data_sets:
            skip("no data set")
            continue
        inputs, outputs = case.data_sets[0]
        inputs = [as_array(v) for v in inputs]
        outputs = [as_array(v) for v in outputs]
        if len(inputs) != len(graph.input) or len(outputs) != len(graph.output):
            skip("data set does not match the graph's inputs and outputs")
            continue
        problem = None
        for info, array in zip(graph.input, inputs):
            problem = problem or value_problem(info, array, "input")
        for info, array in zip(graph.output, outputs):
            problem = problem or value_problem(info, array, "output")
        if problem:
            skip(problem)
            continue
        size = sum(a.nbytes for a in inputs + outputs)
        if size >= args.max_bytes:
            skip("data over %d KiB" % (args.max_bytes // 1024))
            continue
        if random_dropout(case.model, inputs):
            skip("random: training-mode Dropout (numpy's generator)")
            continue
        model, problem = move_opset(case.model)
        if problem:
            skip(problem)
            continue
        if default_opset(model) != default_opset(case.model):
            moved_opsets[(default_opset(case.model), default_opset(model))] += 1
        model, remaining = make_static(model, inputs)
        if len(remaining) != len(inputs):
            made_static += 1
        kept.append((case.name, op, model, remaining,
                     [(o.name, a) for o, a in zip(graph.output, outputs)]))

    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    kept.sort(key=lambda k: k[0])
    for name, op, model, inputs, outputs in kept:
        directory = os.path.join(args.out, name)
        os.makedirs(directory)
        with open(os.path.join(directory, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString(deterministic=True))
        tensors = [("in." + n, a) for n, a in inputs]
        tensors += [("out." + n, a) for n, a in outputs]
        # The graph's input and output order, which the sorted tensors lose.
        metadata = {
            "inputs": json.dumps([n for n, _ in inputs]),
            "outputs": json.dumps([n for n, _ in outputs]),
        }
        write_safetensors(os.path.join(directory, "data.safetensors"), tensors,
                          metadata)
    with open(os.path.join(args.out, "INDEX"), "w") as f:
        for name, op, _, _, _ in kept:
            f.write("%s %s\n" % (name, op))

    # The report.
    kept_per_op = collections.Counter(k[1] for k in kept)
    print("onnx %s: %d node tests, %d of the %d op types gpipe imports" %
          (onnx.__version__, len(cases),
           len(set(kept_per_op) | set(skipped)), len(ops)))
    print("%-28s %5s %7s  %s" % ("op", "kept", "skipped", "why skipped"))
    for op in sorted(set(kept_per_op) | set(skipped)):
        reasons = "; ".join("%s (%d)" % (r, n)
                            for r, n in sorted(skipped[op].items()))
        print("%-28s %5d %7d  %s" % (op, kept_per_op[op],
                                      sum(skipped[op].values()), reasons))
    absent = sorted(ops - set(kept_per_op) - set(skipped))
    if absent:
        print("supported ops without node tests: " + ", ".join(absent))
    print("opsets moved: " + ", ".join(
        "%d -> %d (%d)" % (a, b, n)
        for (a, b), n in sorted(moved_opsets.items())))
    print("cases with inputs made constant: %d" % made_static)
    print("kept %d cases, skipped %d of supported ops, %d of %d other op "
          "types" % (len(kept), sum(sum(r.values()) for r in skipped.values()),
                     sum(unsupported.values()), len(unsupported)))
    total = 0
    for root, _, files in os.walk(args.out):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    print("%s: %.2f MB in %d files" % (os.path.relpath(args.out), total / 1e6,
                                       2 * len(kept) + 1))


if __name__ == "__main__":
    main()
