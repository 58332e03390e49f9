#!/usr/bin/env python3
#===- check-eval.py - An evaluation against its reference ----------------===#
#
# Usage: check-eval.py METRICS.jsonl GOLDEN.safetensors [--rtol X]
#
# Compares the last `eval_loss` (and `eval_accuracy`) of gpipe-run's
# --metrics file with the `eval_loss` (and `eval_accuracy`) GOLDEN's metadata
# records (make_trainer_goldens.py: PyTorch's eval-mode loss). Prints both
# and `N passed, N failed`; exits 1 when the loss is off by more than rtol
# (relative) or the accuracy differs. Standard library only.
#
#===----------------------------------------------------------------------===#
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
compare = __import__("compare-safetensors")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("golden")
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args()
    last = None
    with open(args.metrics) as f:
        for line in f:
            record = json.loads(line)
            if "eval_loss" in record:
                last = record
    metadata = {}
    compare.read(args.golden, metadata)
    if last is None:
        print("no eval_loss in " + args.metrics)
        print("0 passed, 1 failed")
        return 1
    passed = failed = 0
    loss, want = last["eval_loss"], float(metadata["eval_loss"])
    error = abs(loss - want) / abs(want)
    ok = error <= args.rtol
    print("eval loss %.9g, reference %.9g, relative error %.3g: %s" %
          (loss, want, error, "ok" if ok else "FAILED"))
    passed, failed = passed + ok, failed + (not ok)
    if "eval_accuracy" in metadata:
        got, want = last.get("eval_accuracy"), float(metadata["eval_accuracy"])
        ok = got is not None and abs(got - want) < 1e-12
        print("eval accuracy %s, reference %.9g: %s" %
              (got, want, "ok" if ok else "FAILED"))
        passed, failed = passed + ok, failed + (not ok)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
