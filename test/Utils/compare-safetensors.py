#!/usr/bin/env python3
#===- compare-safetensors.py - Compare tensors of two safetensors files ---===#
#
# Usage: compare-safetensors.py A B [--rtol X] [--bitwise] [--prefix-a P]
#                                [--prefix-b P] [--names n1,n2,...]
#                                [--map FILE]
#
# Compares every tensor of B (or those named) with the tensor of A of the
# same name (after prefixes: A's "grad.<name>" against B's "<name>" with
# --prefix-a grad.). --bitwise: the raw bytes must be equal. Otherwise the
# relative error ||a - b|| / ||a|| (2-norms, in double) must be <= --rtol.
# Prints one line per tensor and `N passed, N failed`; exits 1 on any
# failure. --loss also compares A's scalar tensor `loss` with the "loss"
# entry of B's metadata (what gpipe-run --save-grads records for the first
# step). Standard library only (f32, f64, i64, i32 tensors).
#
#===----------------------------------------------------------------------===#
import argparse
import json
import math
import struct
import sys

FORMATS = {"F32": "f", "F64": "d", "I64": "q", "I32": "i"}


def read(path, metadata=None):
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    base = 8 + size
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            if metadata is not None:
                metadata.update(info)
            continue
        begin, end = info["data_offsets"]
        tensors[name] = (info["dtype"], info["shape"], data[base + begin:base + end])
    return tensors


def values(dtype, raw):
    fmt = FORMATS[dtype]
    n = len(raw) // struct.calcsize(fmt)
    return struct.unpack("<%d%s" % (n, fmt), raw)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--bitwise", action="store_true")
    parser.add_argument("--prefix-a", default="")
    parser.add_argument("--prefix-b", default="")
    parser.add_argument("--names", default="")
    parser.add_argument("--loss", action="store_true")
    parser.add_argument("--map", default="")
    args = parser.parse_args()
    renames = {}
    if args.map:
        with open(args.map) as f:
            for line in f:
                words = line.split()
                if len(words) == 2 and not line.startswith("#"):
                    renames[words[0]] = words[1]
    a = read(args.a)
    meta_b = {}
    b = read(args.b, meta_b)
    names = [n for n in args.names.split(",") if n] or sorted(
        n[len(args.prefix_b):] for n in b if n.startswith(args.prefix_b))
    passed = failed = 0
    if args.loss:
        if "loss" not in a or "loss" not in meta_b:
            print("FAIL loss: missing in %s" % (args.a if "loss" not in a else args.b))
            failed += 1
        else:
            expected = values(a["loss"][0], a["loss"][2])[0]
            got = float(meta_b["loss"])
            rel = abs(got - expected) / abs(expected) if expected else abs(got)
            ok = rel <= args.rtol
            print("%s loss: %.9g vs %.9g, relative error %.3g (tolerance %g)" %
                  ("ok" if ok else "FAIL", expected, got, rel, args.rtol))
            passed += ok
            failed += not ok
    for name in names:
        ka, kb = args.prefix_a + renames.get(name, name), args.prefix_b + name
        if ka not in a or kb not in b:
            print("FAIL %s: missing in %s" % (name, args.a if ka not in a else args.b))
            failed += 1
            continue
        (da, sa, ra), (db, sb, rb) = a[ka], b[kb]
        if sa != sb:
            print("FAIL %s: shape %s vs %s" % (name, sa, sb))
            failed += 1
            continue
        if args.bitwise:
            ok = da == db and ra == rb
            print("%s %s: %s" % ("ok" if ok else "FAIL", name,
                                  "bitwise equal" if ok else "bits differ"))
        else:
            va, vb = values(da, ra), values(db, rb)
            diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(va, vb)))
            norm = math.sqrt(sum(x * x for x in va))
            rel = diff / norm if norm > 0 else diff
            ok = rel <= args.rtol
            print("%s %s: relative error %.3g (tolerance %g)" %
                  ("ok" if ok else "FAIL", name, rel, args.rtol))
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not names else 0


if __name__ == "__main__":
    sys.exit(main())
