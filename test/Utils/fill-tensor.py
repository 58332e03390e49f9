#!/usr/bin/env python3
#===- fill-tensor.py - Set every element of a safetensors tensor ----------===#
#
# Usage: fill-tensor.py IN OUT NAME VALUE
#
# Copies safetensors file IN to OUT with every element of tensor NAME set to
# VALUE (an attention mask of all ones, say). Standard library only (F32,
# F64, I64, I32).
#
#===----------------------------------------------------------------------===#
import json
import struct
import sys

FORMATS = {"F32": "f", "F64": "d", "I64": "q", "I32": "i"}


def main():
    src, dst, name, value = sys.argv[1:5]
    with open(src, "rb") as f:
        data = bytearray(f.read())
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    info = header[name]
    fmt = FORMATS[info["dtype"]]
    begin, end = info["data_offsets"]
    count = (end - begin) // struct.calcsize(fmt)
    v = float(value) if fmt in "fd" else int(value)
    data[8 + size + begin:8 + size + end] = struct.pack("<%d%s" % (count, fmt),
                                                       *([v] * count))
    with open(dst, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
