#!/usr/bin/env python3
#===- kill-resume.py - Crash a training run at random, resume, compare ----===#
#
# Usage: kill-resume.py --run A.so --resume B.so --steps N --expect P.st
#                       --workdir DIR [--trials T] [--seed S] [-- ARGS...]
#
# Each trial starts `gpipe-run A.so --steps N --checkpoint-dir DIR/cp
# --checkpoint-every 1 ARGS`, kills it with SIGKILL after a random delay
# (uniform over the time a whole run takes, so kills land in compute and in
# checkpoint writes alike), then runs `gpipe-run B.so --steps N
# --checkpoint-dir DIR/cp --resume --save-params DIR/out.st ARGS`. Every
# resume must succeed and its final parameters must equal P.st byte for
# byte (the run straight through). A and B may have different stage counts.
# Prints how many kills left an interrupted checkpoint write behind, and
# `N passed, N failed`; exits 1 on any failure.
#
#===----------------------------------------------------------------------===#
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", required=True)
    parser.add_argument("--resume", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--expect", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--gpipe-run", default="gpipe-run")
    parser.add_argument("extra", nargs="*")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cp = os.path.join(args.workdir, "cp")
    out = os.path.join(args.workdir, "out.st")
    expect = open(args.expect, "rb").read()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")

    base = [args.gpipe_run, "--steps", str(args.steps), "--checkpoint-dir", cp,
            "--quiet"] + args.extra
    # How long a whole run takes, to spread the kills over it.
    shutil.rmtree(cp, ignore_errors=True)
    start = time.monotonic()
    subprocess.run([args.gpipe_run, args.run] + base[1:] +
                   ["--checkpoint-every", "1"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    whole = time.monotonic() - start

    passed = failed = torn = 0
    for trial in range(args.trials):
        shutil.rmtree(cp, ignore_errors=True)
        victim = subprocess.Popen([args.gpipe_run, args.run] + base[1:] +
                                  ["--checkpoint-every", "1"], env=env,
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, whole))
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        if os.path.isdir(cp) and any(n.startswith(".tmp-")
                                     for n in os.listdir(cp)):
            torn += 1
        if os.path.exists(out):
            os.unlink(out)
        resumed = subprocess.run([args.gpipe_run, args.resume] + base[1:] +
                                 ["--resume", "--save-params", out], env=env,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        ok = resumed.returncode == 0 and os.path.exists(out) and \
            open(out, "rb").read() == expect
        if ok:
            passed += 1
        else:
            failed += 1
            print("trial %d FAILED (exit %d):\n%s" %
                  (trial, resumed.returncode, resumed.stdout))
    print("kills that interrupted a checkpoint write: %d of %d" %
          (torn, args.trials))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
