#!/usr/bin/env python3
#===- machine_accuracy.py - Predictions without a per-model profile ------===#
#
# How well gpipe-compile predicts a training step on this machine before
# any model was profiled: once from the machine profile gpipe-calibrate
# measured (GEMM rates by shape and threads, streaming rates, kernel times,
# calls), once from the built-in cpu profile (a fixed roofline). For each
# model and configuration it compiles both, trains the library (the two
# compiles share partition and schedule only when their costs agree, so
# each is run) and prints the predicted and measured step times and the
# errors. The machine profile's compile takes its GEMM implementations per
# shape (--gemm auto); a third compile, the same with --gemm openblas,
# shows what that choice changes, measured in the same rounds. The runs
# alternate over --repeat rounds, each row keeping its fastest. Standard
# library only; run it on an idle machine:
#
#   bench/machine_accuracy.py [--bin build/bin] [--machine FILE]
#                             [--steps 20] [--repeat 3] [--models a,b]
#
# Without --machine it runs gpipe-calibrate first, into a temporary file.
#
#===-----------------------------------------------------------------------===#
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

# The shipped presets at their defaults and the models of
# bench/vs_pytorch.py (built-in forms of its MLPs and GPTs).
MODELS = {
    "mlp": ["--preset", "mlp"],
    "gpt": ["--preset", "gpt"],
    "resnet": ["--preset", "resnet"],
    "mlp-wide": ["--preset", "mlp", "--depth", "6", "--width", "512",
                 "--in-features", "256", "--batch", "128"],
    "mlp-deep": ["--preset", "mlp", "--depth", "32", "--width", "256",
                 "--batch", "64"],
    "gpt-64": ["--preset", "gpt", "--width", "64", "--seq-len", "32",
               "--batch", "8"],
    "gpt-256": ["--preset", "gpt", "--width", "256", "--seq-len", "64",
                "--batch", "16", "--heads", "8"],
}

CONFIGS = [(1, 1), (2, 8)]  # (K, M)

# The compiles of each row: (name, machine profile or none, --gemm).
KINDS = (("machine", True, "auto"), ("openblas", True, "openblas"),
         ("builtin", False, "auto"))


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stdout))
    return p.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bin", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin"))
    p.add_argument("--machine", help="a machine profile (default: measure)")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3,
                   help="rounds (at least 1); each row keeps its fastest")
    p.add_argument("--models", default=",".join(MODELS))
    args = p.parse_args()
    if args.repeat < 1:
        sys.exit("--repeat needs at least 1 round")
    work = tempfile.mkdtemp(prefix="gpipe-machine-accuracy-")
    machine = args.machine
    if not machine:
        machine = os.path.join(work, "machine.json")
        print(run([os.path.join(args.bin, "gpipe-calibrate"), "-o", machine]),
              end="")
    models = args.models.split(",")
    rows = []
    for model in models:
        if model not in MODELS:
            sys.exit("unknown model '%s' (known: %s)" %
                     (model, ", ".join(MODELS)))
        for k, m in CONFIGS:
            row = {"model": model, "k": k, "m": m}
            for kind, profiled, gemm in KINDS:
                lib = os.path.join(work, "%s-k%d-%s.so" % (model, k, kind))
                report = run([os.path.join(args.bin, "gpipe-compile")] +
                             MODELS[model] +
                             ["--stages", str(k), "--microbatches", str(m),
                              "--machine-file", machine if profiled else "none",
                              "--gemm", gemm, "-o", lib])
                predicted = re.search(
                    r"step time ([0-9.]+) (s|ms|us|ns) predicted", report)
                if not predicted:
                    sys.exit("no predicted step time in:\n" + report)
                scale = {"s": 1, "ms": 1e-3, "us": 1e-6,
                         "ns": 1e-9}[predicted.group(2)]
                row[kind] = (lib, float(predicted.group(1)) * scale, None)
            rows.append(row)
    # Alternating rounds: every library once per round, each keeping its
    # fastest median step.
    for _ in range(args.repeat):
        for row in rows:
            for kind, _, _ in KINDS:
                lib, predicted, best = row[kind]
                text = run([os.path.join(args.bin, "gpipe-run"), lib,
                            "--steps", str(args.steps)])
                measured = re.search(r"step time: measured ([0-9.]+) s", text)
                if not measured:
                    sys.exit("no step time in:\n" + text)
                value = float(measured.group(1))
                row[kind] = (lib, predicted,
                             value if best is None else min(best, value))
    print("# predicted vs measured step time (ms), %d steps, median after "
          "the first, fastest of %d rounds; machine profile %s" %
          (args.steps, args.repeat, machine))
    print("%-9s %-3s %-3s %10s %10s %8s   %10s %10s %8s   %10s %10s %8s"
          " %8s" %
          ("model", "K", "M", "machine", "measured", "error", "openblas",
           "measured", "error", "built-in", "measured", "error", "speedup"))
    errors = {kind: [] for kind, _, _ in KINDS}
    for row in rows:
        cells = []
        for kind, _, _ in KINDS:
            _, predicted, measured = row[kind]
            error = predicted / measured - 1
            errors[kind].append(abs(error))
            cells.append("%10.3f %10.3f %+7.1f%%" %
                         (predicted * 1e3, measured * 1e3, 100 * error))
        # The per-shape GEMM choice against OpenBLAS everywhere, measured.
        speedup = row["openblas"][2] / row["machine"][2]
        print("%-9s %-3d %-3d %s   %s   %s %7.2fx" %
              (row["model"], row["k"], row["m"], cells[0], cells[1], cells[2],
               speedup))
    for kind, label in (("machine", "machine profile, --gemm auto"),
                        ("openblas", "machine profile, --gemm openblas"),
                        ("builtin", "built-in profile")):
        e = errors[kind]
        print("%s: %d of %d within 30%%, median error %.1f%%, largest %.1f%%"
              % (label, sum(x <= 0.30 for x in e), len(e),
                 100 * statistics.median(e), 100 * max(e)))


if __name__ == "__main__":
    main()
