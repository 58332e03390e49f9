#!/usr/bin/env python3
#===- plan_accuracy.py - Predicted against measured step time ------------===#
#
# How well the cost model predicts training on this machine once it has a
# measured profile. For each model it measures the profile (`gpipe-run
# --profile`: per micro-batch size at K = 1 and at K = 2, which also
# measures the link, under remat stage and none and, at K = 2, schedule
# gpipe and 1f1b, all merged into one file that keeps each measurement's
# fastest run: a layer runs at another speed when both cores are busy, a
# backward reading kept values at another than one reading recomputed ones,
# and any layer at another when the schedule keeps more live), trains every configuration of a grid,
# and prints per configuration the step time the compiler predicts from the
# profile (`--profile-file`), the measured one (median of the steps after
# the first) and the error:
#
#   grid: K in {1, 2}; M in the --microbatches list; schedule gpipe and 1f1b
#   (K = 2); remat stage and none; for K = 2 the compiler's balance and the
#   balances one layer either side of it.
#
# The machine's speed drifts over seconds to minutes, so the measurements
# go in --repeat rounds, each a round of the profile and one over the grid,
# every profile measurement and every row keeping its fastest round: the
# profile and the runs sample the same stretch of time. The grid is compiled
# after the first round (the flags fix its partition, schedule and plan; the
# profile changes only the prediction), the predictions come from the final
# profile. With --autotune it also compiles each model with `gpipe-compile
# --autotune` over the same space from the final profile and runs its pick
# side by side with the grid's measured best (--repeat rounds of the two,
# each keeping its fastest). Standard library only; run it on an idle
# machine:
#
#   bench/plan_accuracy.py [--bin build/bin] [--steps 12] [--repeat 3]
#                          [--microbatches 1,2,4,8] [--autotune]
#
#===-----------------------------------------------------------------------===#
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

MODELS = {
    # The GPT preset at its defaults (D=64, T=32, 4 blocks, batch 8... see
    # gpipe-compile --help) and an MLP wide enough to be GEMM-bound.
    "gpt": ["--preset", "gpt", "--batch", "16"],
    "mlp": ["--preset", "mlp", "--depth", "6", "--width", "512",
            "--in-features", "256", "--batch", "128"],
}


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stdout))
    return p.stdout


def compile_model(args, model, out, extra):
    return run([os.path.join(args.bin, "gpipe-compile")] + MODELS[model] +
               extra + ["-o", out])


def train(args, lib, extra=()):
    text = run([os.path.join(args.bin, "gpipe-run"), lib, "--steps",
                str(args.steps)] + list(extra))
    m = re.search(r"step time: measured ([0-9.]+) s .*predicted ([0-9.]+) s",
                  text)
    if not m:
        sys.exit("no step time in:\n" + text)
    return float(m.group(2)), float(m.group(1))


def balance_of(report):
    """The balance a compile report shows (layers per stage)."""
    return [int(m.group(1)) for m in
            re.finditer(r"^\s+\d+\s+\d+\s+(\d+)\s", report, re.M)]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bin", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin"))
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--microbatches", default="1,2,4,8")
    p.add_argument("--models", default="gpt,mlp")
    p.add_argument("--autotune", action="store_true")
    p.add_argument("--repeat", type=int, default=1,
                   help="rounds over the grid; each row keeps its fastest")
    args = p.parse_args()
    ms = [int(m) for m in args.microbatches.split(",")]
    work = tempfile.mkdtemp(prefix="gpipe-plan-accuracy-")
    print("# predicted vs measured step time (ms), %d steps, median after the "
          "first, fastest of %d round(s); profile measured on this machine" %
          (args.steps, args.repeat))
    summary = []
    for model in args.models.split(","):
        profile = os.path.join(work, model + ".profile.json")
        # The profile: every K, M, schedule and remat policy at the
        # compiler's balance (the file keeps each one's fastest run).
        profile_libs = []
        for k in (1, 2):
            for m in ms:
                for schedule in (["gpipe"] if k == 1 else ["gpipe", "1f1b"]):
                    for remat in ("stage", "none"):
                        lib = os.path.join(work, "%s-profile-k%d-m%d-%s-%s.so"
                                           % (model, k, m, schedule, remat))
                        compile_model(args, model, lib,
                                      ["--stages", str(k), "--microbatches",
                                       str(m), "--schedule", schedule,
                                       "--remat", remat, "--quiet"])
                        profile_libs.append(lib)
        def profile_round():
            for lib in profile_libs:
                run([os.path.join(args.bin, "gpipe-run"), lib, "--steps",
                     str(args.steps), "--profile", profile, "--quiet"])
        # A first round of the profile gives the compiler's balances (and
        # the autotuner's pick).
        profile_round()
        rows = []
        configs = []
        for k in (1, 2):
            for m in ms:
                for schedule in (["gpipe"] if k == 1 else ["gpipe", "1f1b"]):
                    for remat in ("stage", "none"):
                        base = ["--stages", str(k), "--microbatches", str(m),
                                "--schedule", schedule, "--remat", remat]
                        balances = [None]
                        if k == 2:
                            report = compile_model(
                                args, model, os.path.join(work, "probe.mlir"),
                                base + ["--profile-file", profile,
                                        "--emit=scheduled"])
                            b = balance_of(report)
                            balances = [b] + [
                                [b[0] + d, b[1] - d] for d in (-1, 1)
                                if b[0] + d >= 1 and b[1] - d >= 1]
                        for b in balances:
                            extra = list(base)
                            if b is not None:
                                extra += ["--balance", ",".join(map(str, b))]
                            configs.append((k, m, schedule, remat, b, extra))
        # Every configuration compiled once (its partition, schedule and
        # plan are fixed by the flags; the profile changes only the
        # prediction); then --repeat rounds, each a round of the profile
        # and one over the grid, every row and every profile measurement
        # keeping its fastest: both sample the same stretch of the
        # machine's drifting speed, and a slow phase costs a round, not a
        # row.
        libs = []
        for i, (k, m, schedule, remat, b, extra) in enumerate(configs):
            lib = os.path.join(work, "run%d.so" % i)
            compile_model(args, model, lib, extra + ["--quiet"])
            libs.append(lib)
        best = [None] * len(libs)
        for r in range(args.repeat):
            if r > 0:
                profile_round()
            for i, lib in enumerate(libs):
                _, measured = train(args, lib)
                if best[i] is None or measured < best[i]:
                    best[i] = measured
        # The prediction from the final profile.
        for (k, m, schedule, remat, b, extra), measured in zip(configs, best):
            report = compile_model(
                args, model, os.path.join(work, "predict.mlir"),
                extra + ["--profile-file", profile, "--emit=scheduled"])
            predicted = re.search(r"step time ([0-9.]+) ms predicted", report)
            if not predicted:
                sys.exit("no predicted step time in:\n" + report)
            rows.append((k, m, schedule, remat,
                         "-" if b is None else ",".join(map(str, b)),
                         float(predicted.group(1)) * 1e-3, measured))
        print("\n## %s (%s)" % (model, " ".join(MODELS[model])))
        print("%-3s %-3s %-8s %-6s %-8s %12s %12s %8s" %
              ("K", "M", "schedule", "remat", "balance", "predicted",
               "measured", "error"))
        for k, m, schedule, remat, b, predicted, measured in rows:
            print("%-3d %-3d %-8s %-6s %-8s %12.3f %12.3f %+7.1f%%" %
                  (k, m, schedule, remat, b, predicted * 1e3, measured * 1e3,
                   100 * (predicted / measured - 1)))
        for k in (1, 2):
            errors = [abs(r[5] / r[6] - 1) for r in rows if r[0] == k]
            within = sum(e <= 0.15 for e in errors)
            summary.append("%s K=%d: %d of %d configurations within 15%%, "
                           "largest error %.1f%%, median %.1f%%" %
                           (model, k, within, len(errors), 100 * max(errors),
                            100 * statistics.median(errors)))
        best = min(rows, key=lambda r: r[6])
        summary.append("%s: measured best K=%d M=%d %s remat %s balance %s "
                       "(%.3f ms)" % (model, best[0], best[1], best[2],
                                      best[3], best[4], best[6] * 1e3))
        if args.autotune:
            # The pick of the final profile, run side by side with the
            # grid's measured best, --repeat rounds, each keeping its
            # fastest.
            tuned = os.path.join(work, "tuned.so")
            report = compile_model(
                args, model, tuned,
                ["--autotune", "--max-stages", "2", "--profile-file", profile])
            pick = re.search(r"^autotune: compiling (.*)$", report, re.M)
            best_lib = libs[rows.index(best)]
            tuned_ms = best_ms = None
            for _ in range(args.repeat):
                t = train(args, tuned)[1]
                b = train(args, best_lib)[1]
                tuned_ms = t if tuned_ms is None else min(tuned_ms, t)
                best_ms = b if best_ms is None else min(best_ms, b)
            summary.append("%s: autotuner's pick %s measured %.3f ms, the "
                           "grid's best beside it %.3f ms: %+.1f%%" %
                           (model, pick.group(1) if pick else "?",
                            tuned_ms * 1e3, best_ms * 1e3,
                            100 * (tuned_ms / best_ms - 1)))
    print("\n## summary")
    for line in summary:
        print(line)


if __name__ == "__main__":
    main()
