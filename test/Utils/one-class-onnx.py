#!/usr/bin/env python3
#===- one-class-onnx.py - An ONNX model whose output ends in a size-1 dim --===#
#
# Usage: one-class-onnx.py OUT
#
# Writes ONNX model OUT: input [8, 16] -> MatMul [16, 10] -> Relu ->
# Reshape to [8, 10, 1], the output (an export whose last dim is 1, which a
# cross-entropy would take as one class). The protobuf is encoded by hand,
# standard library only (no onnx package needed).
#
#===----------------------------------------------------------------------===#
import struct
import sys


def varint(n):
    out = b""
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def field(number, wire, payload):
    return varint((number << 3) | wire) + payload


def num(number, value):
    return field(number, 0, varint(value))


def msg(number, body):
    if isinstance(body, str):
        body = body.encode()
    return field(number, 2, varint(len(body)) + body)


FLOAT, INT64 = 1, 7


def tensor(name, dims, dtype, raw):
    return b"".join(num(1, d) for d in dims) + num(2, dtype) + msg(8, name) + \
        msg(9, raw)


def value_info(name, dims):
    shape = b"".join(msg(1, num(1, d)) for d in dims)
    return msg(1, name) + msg(2, msg(1, num(1, FLOAT) + msg(2, shape)))


def node(op, inputs, outputs, name):
    return b"".join(msg(1, i) for i in inputs) + \
        b"".join(msg(2, o) for o in outputs) + msg(3, name) + msg(4, op)


def main():
    weights = struct.pack("<160f", *((i % 7 - 3) / 10 for i in range(160)))
    shape = struct.pack("<3q", 8, 10, 1)
    graph = b"".join([
        msg(1, node("MatMul", ["input", "w"], ["h"], "/fc/MatMul")),
        msg(1, node("Relu", ["h"], ["r"], "/fc/Relu")),
        msg(1, node("Reshape", ["r", "shape"], ["output"], "/out/Reshape")),
        msg(2, "one_class"),
        msg(5, tensor("w", [16, 10], FLOAT, weights)),
        msg(5, tensor("shape", [3], INT64, shape)),
        msg(11, value_info("input", [8, 16])),
        msg(12, value_info("output", [8, 10, 1])),
    ])
    model = num(1, 8) + msg(2, "one-class-onnx.py") + msg(7, graph) + \
        msg(8, msg(1, "") + num(2, 17))
    open(sys.argv[1], "wb").write(model)


if __name__ == "__main__":
    main()
