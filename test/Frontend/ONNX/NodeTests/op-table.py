#!/usr/bin/env python3
"""Prints the README's table of imported ONNX ops from what passes.

Usage: op-table.py GPIPE_NODE_TEST CASES_DIR

Runs gpipe-node-test over ONNX's node tests and prints, for every op type
gpipe imports (lib/Frontend/ONNX/ONNXOps.def), how many of its node-test
cases pass; ops without a kept case are listed as such. The README's op
table is this script's output, pasted between its markers.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEF = os.path.join(HERE, "..", "..", "..", "..", "lib", "Frontend", "ONNX",
                   "ONNXOps.def")


def main():
    tool, cases = sys.argv[1:3]
    ops = re.findall(r"^ONNX_OP\((\w+),", open(DEF).read(), re.M)
    out = subprocess.run([tool, cases], capture_output=True, text=True).stdout
    counts = {m.group(1): (int(m.group(2)), int(m.group(3)))
              for m in re.finditer(r"^(\w+)\s+(\d+)/(\d+)$", out, re.M)}
    total = re.search(r"^node tests: .*$", out, re.M)
    print("| op | node tests passed |")
    print("|---|---|")
    for op in sorted(set(ops)):
        if op in counts:
            passed, cases_ = counts[op]
            print("| %s | %d/%d |" % (op, passed, cases_))
        else:
            print("| %s | no case kept |" % op)
    if total:
        print()
        print(total.group(0))


if __name__ == "__main__":
    main()
