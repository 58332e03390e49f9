#!/usr/bin/env python3
#===- regression-data.py - A small regression data set -------------------===#
#
# Usage: regression-data.py OUT N FEATURES OUTPUTS [SEED]
#
# Writes a safetensors file with 'input' [N, FEATURES] f32 drawn from a
# normal distribution and 'labels' [N, OUTPUTS] f32 = a fixed random linear
# map of the input plus noise, for training with --loss mse in tests.
# Standard library only; the same arguments give the same bytes.
#
#===----------------------------------------------------------------------===#
import json
import random
import struct
import sys


def main():
    out, n, features, outputs = sys.argv[1], *map(int, sys.argv[2:5])
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    weight = [[rng.gauss(0, 1 / features ** 0.5) for _ in range(features)]
              for _ in range(outputs)]
    inputs, labels = [], []
    for _ in range(n):
        x = [rng.gauss(0, 1) for _ in range(features)]
        inputs += x
        labels += [sum(w * v for w, v in zip(row, x)) + rng.gauss(0, 0.1)
                   for row in weight]
    blobs = [("input", [n, features], inputs), ("labels", [n, outputs], labels)]
    header, offset = {}, 0
    for name, shape, values in blobs:
        size = 4 * len(values)
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, values in blobs:
            f.write(struct.pack("<%df" % len(values), *values))


if __name__ == "__main__":
    main()
