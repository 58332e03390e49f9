#!/usr/bin/env python3
#===- eval-loss.py - A prediction's loss against labels -------------------===#
#
# Usage: eval-loss.py OUTPUTS DATA
#
# The cross-entropy of OUTPUTS' tensor `output` (logits [N, ..., C], what
# `gpipe-run --predict --save-outputs` writes) against DATA's `labels`
# ([N, ...] integers), averaged over every position, and the fraction of
# positions whose largest logit (the first on ties) is the label; printed as
# `loss L, accuracy A%`, as gpipe-run prints an evaluation. In double, from
# the f32 logits: what --eval computes, by another route. Standard library
# only.
#
#===----------------------------------------------------------------------===#
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
compare = __import__("compare-safetensors")


def main():
    outputs = compare.read(sys.argv[1])
    data = compare.read(sys.argv[2])
    dtype, shape, raw = outputs["output"]
    logits = compare.values(dtype, raw)
    ldtype, _, lraw = data["labels"]
    labels = compare.values(ldtype, lraw)
    classes = shape[-1]
    positions = len(logits) // classes
    total, correct = 0.0, 0
    for p in range(positions):
        row = logits[p * classes:(p + 1) * classes]
        best = max(range(classes), key=lambda c: (row[c], -c))
        total += row[best] + math.log(
            sum(math.exp(x - row[best]) for x in row)) - row[labels[p]]
        correct += best == labels[p]
    print("loss %.6f, accuracy %.2f%%" % (total / positions,
                                           100.0 * correct / positions))


if __name__ == "__main__":
    main()
