#!/usr/bin/env python3
#===- within.py - Run a command that must end in time ---------------------===#
#
# Usage: within.py SECONDS [--expect-failure] -- COMMAND...
#
# Runs COMMAND with its output passed through. Exits 1 (after killing it and
# printing "within.py: still running after N s") if it runs longer than
# SECONDS; otherwise exits 0 when COMMAND's exit status is what is expected
# (zero, or nonzero with --expect-failure) and 1 when it is not, printing
# the status and the elapsed time.
#
#===----------------------------------------------------------------------===#
import subprocess
import sys
import time


def main():
    args = sys.argv[1:]
    limit = float(args.pop(0))
    expect_failure = False
    if args and args[0] == "--expect-failure":
        expect_failure = True
        args.pop(0)
    if args and args[0] == "--":
        args.pop(0)
    start = time.monotonic()
    process = subprocess.Popen(args, start_new_session=True)
    try:
        rc = process.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        import os
        import signal
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        print("within.py: still running after %g s" % limit)
        return 1
    elapsed = time.monotonic() - start
    ok = (rc != 0) if expect_failure else (rc == 0)
    print("within.py: exit status %d after %.1f s (limit %g s)" %
          (rc, elapsed, limit))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
