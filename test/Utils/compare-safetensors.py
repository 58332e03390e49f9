#!/usr/bin/env python3
#===- compare-safetensors.py - Compare tensors of two safetensors files ---===#
#
# Usage: compare-safetensors.py A B [--rtol X] [--bitwise] [--prefix-a P]
#                                [--prefix-b P] [--names n1,n2,...]
#                                [--map FILE] [--floor X]
#
# Compares every tensor of B (or those named) with the tensor of A of the
# same name (after prefixes: A's "grad.<name>" against B's "<name>" with
# --prefix-a grad.). --bitwise: the raw bytes must be equal. Otherwise the
# relative error ||a - b|| / ||a|| (2-norms, in double) must be <= --rtol.
# Prints one line per tensor and `N passed, N failed`; exits 1 on any
# failure. --map FILE: lines `<B name> <A name>`, the A name ending in `^T`
# where B holds A's 2-D tensor transposed. Where A holds `<name>@s4096`
# instead of `<name>` (a large reference, sampled), B's tensor is sampled the
# same way (flattened, elements i * n // 4096). --floor X: a difference of
# norm at most X also passes (tensors that are zero in exact arithmetic hold
# only rounding noise). --skip p1,...: B's tensors left out, by name or
# glob (a folded constant or running statistics the reference lacks). --loss also compares A's scalar tensor `loss` with the "loss"
# entry of B's metadata (what gpipe-run --save-grads records for the first
# step). Standard library only (f32, f64, i64, i32 tensors).
#
#===----------------------------------------------------------------------===#
import argparse
import fnmatch
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
    parser.add_argument("--floor", type=float, default=0.0)
    parser.add_argument("--skip", default="")
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
    skip = set(n for n in args.skip.split(",") if n)
    names = [n for n in args.names.split(",") if n] or sorted(
        n[len(args.prefix_b):] for n in b if n.startswith(args.prefix_b))
    names = [n for n in names
             if not any(fnmatch.fnmatchcase(n, pattern) for pattern in skip)]
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
        target = renames.get(name, name)
        transposed = target.endswith("^T")
        target = target[:-2] if transposed else target
        ka, kb = args.prefix_a + target, args.prefix_b + name
        sampled = ka not in a and ka + "@s4096" in a
        if sampled:
            ka += "@s4096"
        if ka not in a or kb not in b:
            print("FAIL %s: missing in %s" % (name, args.a if ka not in a else args.b))
            failed += 1
            continue
        (da, sa, ra), (db, sb, rb) = a[ka], b[kb]
        if transposed and not sampled and len(sa) == 2:
            rows, cols = sa
            va = values(da, ra)
            ra = struct.pack("<%d%s" % (len(va), FORMATS[da]),
                             *(va[i * cols + j] for j in range(cols)
                               for i in range(rows)))
            sa = [cols, rows]
        if sampled:
            vb = values(db, rb)
            n = len(vb)
            if transposed:
                rows, cols = sb[1], sb[0]
                vb = [vb[(k % cols) * rows + k // cols] for k in range(n)]
            picked = [vb[i * n // 4096] for i in range(4096)]
            rb = struct.pack("<%d%s" % (4096, FORMATS[db]), *picked)
            sb = [4096]
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
            ok = rel <= args.rtol or diff <= args.floor
            print("%s %s: relative error %.3g (tolerance %g)" %
                  ("ok" if ok else "FAIL", name, rel, args.rtol))
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not names else 0


if __name__ == "__main__":
    sys.exit(main())
