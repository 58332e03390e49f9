#!/usr/bin/env python3
#===- random-data.py - A safetensors data file of random f32 samples ------===#
#
# Usage: random-data.py OUT N INPUT_DIMS LABEL_DIMS [SEED]
#
# Writes safetensors file OUT with N samples: 'input' [N, INPUT_DIMS] and
# 'labels' [N, LABEL_DIMS], both F32, uniform in [-1, 1) from a fixed seed
# (dims comma-separated, e.g. 32 or 4,8); for regression (--loss mse)
# models in tests. Standard library only.
#
#===----------------------------------------------------------------------===#
import json
import random
import struct
import sys


def main():
    out, count = sys.argv[1], int(sys.argv[2])
    dims = [[int(d) for d in arg.split(",")] for arg in sys.argv[3:5]]
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    header, payload = {}, b""
    for name, shape in zip(("input", "labels"), dims):
        elements = count
        for d in shape:
            elements *= d
        chunk = struct.pack("<%df" % elements,
                            *(rng.uniform(-1, 1) for _ in range(elements)))
        header[name] = {"dtype": "F32", "shape": [count] + shape,
                        "data_offsets": [len(payload),
                                         len(payload) + len(chunk)]}
        payload += chunk
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    open(out, "wb").write(struct.pack("<Q", len(text)) + text + payload)


if __name__ == "__main__":
    main()
