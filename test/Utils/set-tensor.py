#!/usr/bin/env python3
#===- set-tensor.py - Change one element of a safetensors tensor ----------===#
#
# Usage: set-tensor.py IN OUT NAME INDEX VALUE
#
# Copies safetensors file IN to OUT with element INDEX (flat, row-major) of
# tensor NAME set to VALUE; for making bad inputs in tests. Standard library
# only (F32, F64, I64, I32).
#
#===----------------------------------------------------------------------===#
import json
import struct
import sys

FORMATS = {"F32": "f", "F64": "d", "I64": "q", "I32": "i"}


def main():
    src, dst, name, index, value = sys.argv[1:6]
    data = bytearray(open(src, "rb").read())
    (size,) = struct.unpack("<Q", data[:8])
    info = json.loads(data[8:8 + size])[name]
    fmt = FORMATS[info["dtype"]]
    width = struct.calcsize(fmt)
    at = 8 + size + info["data_offsets"][0] + int(index) * width
    number = float(value) if fmt in "fd" else int(value)
    data[at:at + width] = struct.pack("<" + fmt, number)
    open(dst, "wb").write(data)


if __name__ == "__main__":
    main()
