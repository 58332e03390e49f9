#!/usr/bin/env python3
#===- check-rate.py - Check gpipe-node-test's pass rate -------------------===#
#
# Usage: gpipe-node-test CASES | check-rate.py [MIN_PERCENT] [--allow-wrong]
#
# Reads gpipe-node-test's output on stdin, finds its final line
# "node tests: P passed, F failed (X% of N)" and prints the pass rate.
# Exits 1 when the line is missing, when no case ran, or when fewer than
# MIN_PERCENT (default 95) percent of the cases passed. A wrong result or a
# crash (gpipe-node-test's "failures:" line) fails too, unless
# --allow-wrong: a case gpipe refuses is a known gap, one it computes wrongly
# is a bug.
#
#===----------------------------------------------------------------------===#
import re
import sys


def main():
    args = sys.argv[1:]
    allow_wrong = "--allow-wrong" in args
    args = [a for a in args if a != "--allow-wrong"]
    minimum = float(args[0]) if args else 95.0
    rate_match = failures_match = None
    for line in sys.stdin:
        m = re.match(r"node tests: (\d+) passed, (\d+) failed \(", line)
        if m:
            rate_match = m
        m = re.match(r"failures: .*?(\d+) wrong results, (\d+) crashes", line)
        if m:
            failures_match = m
    if not rate_match:
        print("check-rate.py: no 'node tests:' line in the input")
        return 1
    passed, failed = int(rate_match.group(1)), int(rate_match.group(2))
    total = passed + failed
    if total == 0:
        print("check-rate.py: no node test ran")
        return 1
    rate = 100.0 * passed / total
    ok = rate >= minimum
    print("node test pass rate: %.1f%% of %d (minimum %g%%): %s" %
          (rate, total, minimum, "ok" if ok else "BELOW"))
    if failures_match and not allow_wrong:
        wrong, crashes = int(failures_match.group(1)), int(
            failures_match.group(2))
        if wrong or crashes:
            print("check-rate.py: %d wrong results and %d crashes" %
                  (wrong, crashes))
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
