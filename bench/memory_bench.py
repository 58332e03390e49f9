#!/usr/bin/env python3
#===- memory_bench.py - Schedules under a memory budget ------------------===#
#
# What a user does when 1F1B without recomputation does not fit, against
# what gpipe offers instead. A GEMM-heavy GPT with a long sequence (the
# GPT preset, 8 blocks of width 128, T = 512, batch 8) is compiled at K = 2,
# M = 8 under a per-rank budget of --fraction (default 0.75) of the arena
# that 1F1B without recomputation plans, so that it does not fit, and these
# candidates are compiled under that budget:
#
#   1f1b, remat stage      what a user does today (full recomputation)
#   1f1b, remat none       the reference (over the budget by construction)
#   v-half, v-min          the controllable-memory V schedules, remat none
#   interleaved-1f1b,      the other schedules, remat none, where they fit
#   zb-h1, zbv
#   seq1f1b                sequence chunks (not built yet: reported so)
#   autotune               gpipe-compile --autotune --memory-budget B: its pick
#
# Every candidate that fits is trained with `gpipe-run --steps N` in
# --rounds alternating rounds (one run of each per round, so that the
# machine's drift hits all alike). The table shows, per candidate, the
# planned arena of the largest rank against the budget, the arena
# gpipe-run measured, the predicted step, the measured step (median over
# the rounds of each run's median step after the first), the throughput
# and its ratio to 1F1B with full recomputation; then whether the
# autotuner's pick is within 5% of the best measured candidate. Standard
# library only; run it on an idle machine:
#
#   bench/memory_bench.py [--bin build/bin] [--steps 5] [--rounds 3]
#                         [--fraction 0.75]
#
#===-----------------------------------------------------------------------===#
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

MODEL = ["--preset", "gpt", "--depth", "8", "--width", "128", "--heads", "4",
         "--seq-len", "512", "--batch", "8", "--vocab", "256"]
SHAPE = ["--stages", "2", "--microbatches", "8"]

CANDIDATES = [
    ("1f1b, remat stage", ["--schedule", "1f1b", "--remat", "stage"]),
    ("1f1b, remat none", ["--schedule", "1f1b", "--remat", "none"]),
    ("v-half", ["--schedule", "v-half", "--remat", "none"]),
    ("v-min", ["--schedule", "v-min", "--remat", "none"]),
    ("interleaved-1f1b", ["--schedule", "interleaved-1f1b", "--remat",
                          "none"]),
    ("zb-h1", ["--schedule", "zb-h1", "--remat", "none"]),
    ("zbv", ["--schedule", "zbv", "--remat", "none"]),
    ("seq1f1b", None),
    ("autotune", ["--autotune"]),
]
BASELINE = "1f1b, remat stage"


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    return p.returncode, p.stdout


def largest_arena(report):
    """The largest rank's planned arena in a plan report, in bytes."""
    sizes = [int(m) for m in re.findall(r"arena [^()]*\((\d+) B\)", report)]
    return max(sizes) if sizes else None


def predicted_step(report):
    m = re.search(r"step time ([0-9.]+) (ms|s|us) predicted", report)
    if not m:
        return None
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6}[m.group(2)]
    return float(m.group(1)) * scale


def mib(n):
    return "-" if n is None else "%.1f MiB" % (n / 2**20)


def main():
    ap = argparse.ArgumentParser(
        description="Schedules under a memory budget (see the file header)")
    ap.add_argument("--bin", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin"))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fraction", type=float, default=0.75)
    args = ap.parse_args()
    compile_ = os.path.join(args.bin, "gpipe-compile")
    train = os.path.join(args.bin, "gpipe-run")
    work = tempfile.mkdtemp(prefix="memory_bench.")

    # The budget: a fraction of what 1F1B without recomputation plans.
    rc, report = run([compile_] + MODEL + SHAPE +
                     ["--schedule", "1f1b", "--remat", "none", "-o",
                      os.path.join(work, "reference.so")])
    if rc != 0 or largest_arena(report) is None:
        sys.exit("cannot compile the reference:\n" + report)
    reference = largest_arena(report)
    budget = int(reference * args.fraction)
    print("model: %s, %s" % (" ".join(MODEL), " ".join(SHAPE)))
    print("budget: %s per rank (%.2f of the %s that 1F1B without "
          "recomputation plans)" % (mib(budget), args.fraction,
                                    mib(reference)))

    rows = []
    for name, flags in CANDIDATES:
        row = {"name": name, "flags": flags, "runs": []}
        rows.append(row)
        if flags is None:
            row["status"] = "not built yet"
            continue
        path = os.path.join(work, "%d.so" % len(rows))
        rc, report = run([compile_] + MODEL + SHAPE + flags +
                         ["--memory-budget", str(budget), "-o", path])
        row["planned"] = largest_arena(report)
        row["predicted"] = predicted_step(report)
        if rc != 0:
            needs = re.search(r"needs ([0-9.]+ [KMG]iB)", report)
            row["status"] = "over budget" + (
                " (needs %s)" % needs.group(1) if needs else "")
            if not needs:
                row["status"] = "failed: " + report.strip().splitlines()[-1]
            continue
        pick = re.search(r"autotune: compiling (.*)", report)
        if pick:
            row["pick"] = pick.group(1).strip()
        row["status"] = "fits"
        row["path"] = path

    # Alternating rounds over everything that fits.
    for _ in range(args.rounds):
        for row in rows:
            if row.get("status") != "fits":
                continue
            rc, out = run([train, row["path"], "--steps", str(args.steps)])
            if rc != 0:
                row["status"] = "run failed: " + out.strip().splitlines()[-1]
                continue
            step = re.search(r"step time: measured ([0-9.]+) s", out)
            arenas = [int(m) for m in re.findall(
                r"arena rank \d+: measured (\d+) B", out)]
            if step:
                row["runs"].append(float(step.group(1)))
            if arenas:
                row["measured"] = max(arenas)

    base = next((r for r in rows if r["name"] == BASELINE and r["runs"]),
                None)
    base_step = statistics.median(base["runs"]) if base else None
    samples = 8
    header = ["candidate", "status", "planned arena", "of budget",
              "measured arena", "predicted (ms)", "measured (ms)",
              "samples/s", "vs 1f1b remat stage"]
    table = [header]
    for row in rows:
        step = statistics.median(row["runs"]) if row["runs"] else None
        planned = row.get("planned")
        table.append([
            row["name"], row["status"], mib(planned),
            "%.2f" % (planned / budget) if planned else "-",
            mib(row.get("measured")),
            "%.1f" % (row["predicted"] * 1e3) if row.get("predicted") else "-",
            "%.1f" % (step * 1e3) if step else "-",
            "%.2f" % (samples / step) if step else "-",
            "%.2fx" % (base_step / step) if step and base_step else "-",
        ])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))))

    auto = next((r for r in rows if r["name"] == "autotune"), None)
    measured = [(statistics.median(r["runs"]), r["name"]) for r in rows
                if r["runs"] and r["name"] != "autotune"]
    if auto and auto.get("pick"):
        print("autotune picked: %s" % auto["pick"])
    if auto and auto["runs"] and measured:
        best, name = min(measured)
        mine = statistics.median(auto["runs"])
        print("autotune pick: %.1f ms against the best measured candidate "
              "(%s) %.1f ms: %s" % (mine * 1e3, name, best * 1e3,
                                    "within 5%" if mine <= best * 1.05
                                    else "%.0f%% slower" %
                                    ((mine / best - 1) * 100)))


if __name__ == "__main__":
    main()
