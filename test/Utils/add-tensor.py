#!/usr/bin/env python3
#===- add-tensor.py - A safetensors file with one tensor more -------------===#
#
# Usage: add-tensor.py IN OUT NAME
#
# Writes safetensors file OUT with IN's tensors and metadata plus NAME, a
# one-element F32 tensor of shape [1] holding 0; for testing readers that
# refuse tensors they do not know. Standard library only.
#
#===----------------------------------------------------------------------===#
import json
import struct
import sys


def main():
    src, dst, name = sys.argv[1], sys.argv[2], sys.argv[3]
    data = open(src, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    payload = data[8 + size:]
    header[name] = {"dtype": "F32", "shape": [1],
                    "data_offsets": [len(payload), len(payload) + 4]}
    payload += struct.pack("<f", 0.0)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + payload)


if __name__ == "__main__":
    main()
