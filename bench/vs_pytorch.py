#!/usr/bin/env python3
#===- vs_pytorch.py - Training throughput of gpipe and PyTorch, one CPU ---===#
#
# The same models, side by side on this machine's CPU: each is defined here
# in PyTorch, exported to ONNX (the TorchScript exporter, opset 17), then
#
#   - compiled by gpipe-compile (remat none) and trained by gpipe-run at
#     K = 1 (its GEMMs on every core: gpipe-run's automatic BLAS threads;
#     and on one core, --blas-threads 1) and at K = 2 with M = 8 (one rank
#     per core; the schedule and the partition gpipe-compile --autotune
#     picks with K, M and remat pinned, named in the row), the step time
#     gpipe-run reports (median after the first step);
#   - trained by PyTorch eager on 1 and on 2 threads (the best is the
#     reference), and by torch.compile (inductor) where it runs;
#
# every one a full training step (forward, cross-entropy loss, backward,
# SGD update) on the same batch shape. It prints per model the step time,
# samples/s, the step's matmul GFLOP/s (counted by PyTorch's
# FlopCounterMode over one step: forward and backward) and the ratio to the
# best eager time; where gpipe's time goes at K = 1 (gpipe-run
# --kernel-times, with the sgemm time by shape against the ceiling and,
# for a shape below 60% of it per thread, why); and
# the single-core sgemm ceiling measured in the same
# run (OpenBLAS, gpipe's BLAS, through ctypes, and PyTorch's own BLAS on one
# thread, each at 1024^3: the best of them). Run it on an idle machine:
#
#   python -m venv venv && venv/bin/pip install torch onnx onnxscript \
#       transformers
#   venv/bin/python bench/vs_pytorch.py [--bin build/bin] [--steps 20]
#       [--rounds 3] [--models mlp,gpt-small,gpt-gemm,hf-gpt2]
#       [--no-compile]
#       [--baseline-bin OTHER/build/bin]
#
# Every configuration runs once per round and keeps its fastest round (the
# machine's speed drifts over seconds to minutes).
#
# It needs pip's torch and onnx, and transformers for hf-gpt2 (never the
# tests: they need none of them).
#
#===-----------------------------------------------------------------------===#
import argparse
import ctypes
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The GPT of the GPU check's PyTorch reference: gpipe's `gpt` preset
# architecture, 65-symbol vocabulary.
from torch_gpt_eager import GPT  # noqa: E402

# ------------------------------------------------------------------ models


class MLP(nn.Module):
    def __init__(self, inputs, width, depth, classes):
        super().__init__()
        layers, d = [], inputs
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.ReLU()]
            d = width
        layers.append(nn.Linear(d, classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class HFGPT2(nn.Module):
    """Hugging Face's GPT2LMHeadModel (transformers, from pip) returning its
    logits, with the all-ones attention mask built inside the graph: the
    same attention as none, and what the TorchScript exporter needs
    (test/Zoo/Inputs/README.md, "Findings")."""

    def __init__(self, layers, width, heads, seq, vocab):
        super().__init__()
        import transformers
        config = transformers.GPT2Config(
            n_layer=layers, n_embd=width, n_head=heads, n_positions=seq,
            vocab_size=vocab, resid_pdrop=0.0, embd_pdrop=0.0,
            attn_pdrop=0.0, use_cache=False)
        self.model = transformers.GPT2LMHeadModel(config)

    def forward(self, ids):
        return self.model(input_ids=ids, attention_mask=torch.ones_like(ids),
                          use_cache=False).logits


# name -> (description, constructor, batch, example input, classes)
def make_models():
    def tokens(batch, seq, vocab):
        return lambda: torch.randint(0, vocab, (batch, seq))
    return {
        "mlp": ("MLP 256-512x6-10, batch 128",
                lambda: MLP(256, 512, 6, 10), 128,
                lambda: torch.randn(128, 256), 10),
        "gpt-small": ("GPT D=64 T=32 4 blocks 4 heads vocab 65, batch 8",
                      lambda: GPT(4, 64, 4, 32), 8, tokens(8, 32, 65), 65),
        "gpt-gemm": ("GPT D=256 T=64 4 blocks 8 heads vocab 65, batch 16",
                     lambda: GPT(4, 256, 8, 64), 16, tokens(16, 64, 65), 65),
        "hf-gpt2": ("Hugging Face GPT2LMHeadModel D=64 T=32 4 blocks 4 heads "
                    "vocab 65 (tied embeddings), batch 8",
                    lambda: HFGPT2(4, 64, 4, 32, 65), 8, tokens(8, 32, 65),
                    65),
    }


# ------------------------------------------------------------------ runs


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd),
                                           p.stdout))
    return p.stdout


def gpipe_compile(args, onnx_file, work, k, m, bin_dir=None):
    bin_dir = bin_dir or args.bin
    lib = os.path.join(work, "%s-k%d-m%d%s.so" %
                       (os.path.basename(onnx_file), k, m,
                        "" if bin_dir == args.bin else "-baseline"))
    cmd = [os.path.join(bin_dir, "gpipe-compile"), onnx_file, "--stages",
           str(k), "--microbatches", str(m), "--remat", "none", "--quiet",
           "-o", lib]
    if k > 1:
        # The compiler's own pick of schedule and partition for this K and
        # M, as a user would compile it.
        cmd += ["--autotune"]
    run(cmd)
    return lib


def gpipe_step(args, lib, kernel_times=False, blas_threads=None,
               bin_dir=None):
    """(median step seconds after the first, gpipe-run's output)."""
    cmd = [os.path.join(bin_dir or args.bin, "gpipe-run"), lib, "--steps",
           str(args.steps), "--lr", "0.01"]
    if kernel_times:
        cmd.append("--kernel-times")
    if blas_threads:
        cmd += ["--blas-threads", str(blas_threads)]
    out = run(cmd)
    step = re.search(r"step time: measured ([0-9.e+-]+) s", out)
    if not step:
        sys.exit("no step time in gpipe-run's output:\n" + out)
    return float(step.group(1)), out


def torch_train_step(model, x, y, classes):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, classes), y.reshape(-1))
        loss.backward()
        opt.step()
    return step


def time_steps(step, steps, warmup=3):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def labels_for(make_x, classes):
    x = make_x()
    shape = x.shape[:-1] if x.dtype.is_floating_point else x.shape
    return x, torch.randint(0, classes, shape)


def step_flops(model, x, y, classes):
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    with counter:
        logits = model(x)
        F.cross_entropy(logits.reshape(-1, classes), y.reshape(-1)).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def sgemm_ceiling():
    """GFLOP/s of one-thread sgemm at 1024^3: (OpenBLAS, PyTorch's)."""
    n, reps = 1024, 5
    flops = 2.0 * n ** 3
    result = {}
    try:
        blas = ctypes.CDLL("libopenblas.so.0")
        blas.openblas_set_num_threads(1)
        a = (ctypes.c_float * (n * n))()
        b = (ctypes.c_float * (n * n))()
        c = (ctypes.c_float * (n * n))()
        sgemm = blas.cblas_sgemm
        sgemm.argtypes = [ctypes.c_int] * 6 + [
            ctypes.c_float, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
            ctypes.c_int, ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
        call = lambda: sgemm(101, 111, 111, n, n, n, 1.0, a, n, b, n, 0.0, c,
                             n)
        call()
        best = min(timeit(call) for _ in range(reps))
        result["OpenBLAS (gpipe's)"] = flops / best / 1e9
    except OSError as e:
        result["OpenBLAS (gpipe's)"] = None
        print("# OpenBLAS not loaded: %s" % e)
    torch.set_num_threads(1)
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = min(timeit(lambda: torch.mm(a, b)) for _ in range(reps))
    result["PyTorch's BLAS"] = flops / best / 1e9
    return result


def why_slow(shape, rate, ceiling, threads):
    """Why a GEMM shape runs below 60% of the ceiling per thread, where the
    runtime's rules say (Kernels.cpp): products of at most 2^18
    multiply-adds stay on one thread (a batch of them, attention's per-head
    products, shares the threads whole), a GEMM with too few rows for two
    checked blocks runs whole, and a dimension below the sgemm kernel's
    register tile leaves it partly empty."""
    m, n, k = (int(v) for v in shape.split()[0:5:2])  # "M x N x K LAYOUT"
    on_one = rate / ceiling
    if m * n * k <= 1 << 18:
        return ("%d multiply-adds: one product per thread, the call's fixed "
                "cost a large share of it" % (m * n * k))
    if min(m, n, k) < 16:
        return "a dimension of %d: under the sgemm kernel's tile" % min(
            m, n, k)
    if threads > 1 and on_one >= 0.6:
        return ("at %.0f%% of one core's ceiling: it ran whole (too few "
                "rows, or no block of them keeps one call's bits)" %
                (100 * on_one))
    return "(no known cause)"


def timeit(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# ------------------------------------------------------------------ main


def main():
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(
        description="Training throughput of gpipe and PyTorch on this CPU")
    p.add_argument("--bin", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin"))
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--models", default="mlp,gpt-small,gpt-gemm,hf-gpt2")
    p.add_argument("--no-compile", action="store_true",
                   help="leave torch.compile out")
    p.add_argument("--baseline-bin", default=None,
                   help="another build's bin directory: its K=1 and K=2 "
                        "rows are timed in the same rounds, alternating "
                        "with this build's, and shown as a ratio")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds over every configuration; each row keeps "
                        "its fastest")
    args = p.parse_args()
    models = make_models()
    print("# gpipe vs PyTorch %s, training steps on this CPU (%d cores: %s)"
          % (torch.__version__, os.cpu_count(), cpu_name()))
    print("# step: forward, cross-entropy, backward, SGD; median of %d steps "
          "after warm-up, fastest of %d rounds; gpipe remat none" %
          (args.steps, args.rounds))
    ceiling = sgemm_ceiling()
    best_ceiling = max(v for v in ceiling.values() if v)
    print("# single-core sgemm ceiling (1024^3): " + ", ".join(
        "%s %.1f GFLOP/s" % (k, v) for k, v in ceiling.items() if v))
    summary = []
    work = tempfile.mkdtemp(prefix="gpipe-vs-pytorch-")
    for name in args.models.split(","):
        if name not in models:
            sys.exit("unknown model '%s' (have %s)" % (name, ", ".join(models)))
        desc, make, batch, make_x, classes = models[name]
        torch.manual_seed(0)
        model = make()
        x, y = labels_for(make_x, classes)
        onnx_file = os.path.join(work, name + ".onnx")
        model.eval()
        torch.onnx.export(model, (x,), onnx_file, input_names=["input"],
                          output_names=["logits"], opset_version=17,
                          dynamo=False)
        model.train()
        flops = step_flops(model, x, y, classes)
        k1_lib = gpipe_compile(args, onnx_file, work, 1, 1)
        k2_lib = gpipe_compile(args, onnx_file, work, 2, 8)
        base = args.baseline_bin
        if base:
            k1_base = gpipe_compile(args, onnx_file, work, 1, 1, base)
            k2_base = gpipe_compile(args, onnx_file, work, 2, 8, base)
        _, breakdown = gpipe_step(args, k1_lib, kernel_times=True)
        blas = re.search(r"BLAS: (\d+) thread", breakdown)
        blas = int(blas.group(1)) if blas else 1
        cmodel = None
        if not args.no_compile:
            try:
                cmodel = torch.compile(make())
            except Exception as e:  # noqa: BLE001 - report and go on
                compile_error = str(e).splitlines()[0][:60]
        # Every configuration once per round, each keeping its fastest
        # round: a slow phase of the machine costs a round, not a row.
        best = {}

        def keep(key, t):
            if key not in best or t < best[key]:
                best[key] = t
        for _ in range(args.rounds):
            keep("k1", gpipe_step(args, k1_lib)[0])
            if blas > 1:
                keep("k1-one", gpipe_step(args, k1_lib, blas_threads=1)[0])
            k2_time, k2_out = gpipe_step(args, k2_lib)
            keep("k2", k2_time)
            if base:
                keep("k1-base", gpipe_step(args, k1_base, bin_dir=base)[0])
                keep("k2-base", gpipe_step(args, k2_base, bin_dir=base)[0])
            for threads in (1, 2):
                torch.set_num_threads(threads)
                keep(threads, time_steps(
                    torch_train_step(model, x, y, classes), args.steps))
            if cmodel is not None:
                torch.set_num_threads(2)
                try:
                    keep("compile", time_steps(
                        torch_train_step(cmodel, x, y, classes), args.steps))
                except Exception as e:  # noqa: BLE001 - report and go on
                    compile_error = str(e).splitlines()[0][:60]
                    cmodel = None
        k1, k2 = best["k1"], best["k2"]
        k1_one = best.get("k1-one", k1)
        eager = {threads: best[threads] for threads in (1, 2)}
        best_threads = min(eager, key=eager.get)
        reference = eager[best_threads]
        compiled = best.get("compile")
        rows = [("gpipe K=1 (%d BLAS thread%s)" %
                 (blas, "s" if blas > 1 else ""), k1)]
        if blas > 1:
            rows.append(("gpipe K=1 (1 BLAS thread)", k1_one))
        schedule = re.search(r"schedule (\S+?),? remat", k2_out)
        rows.append(("gpipe K=2 M=8 (%s)" %
                     (schedule.group(1) if schedule else "autotuned"), k2))
        for threads in (1, 2):
            rows.append(("PyTorch eager, %d thread%s" %
                         (threads, "s" if threads > 1 else ""),
                         eager[threads]))
        if base:
            rows.append(("baseline K=1", best["k1-base"]))
            rows.append(("baseline K=2 M=8", best["k2-base"]))
        if compiled is not None:
            rows.append(("torch.compile, 2 threads", compiled))
        elif not args.no_compile:
            rows.append(("torch.compile: fails (%s)" % compile_error, None))
        print("\n## %s (%s; %.2f GFLOP of matmuls per step)" %
              (name, desc, flops / 1e9))
        print("%-32s %10s %12s %10s %12s" % ("", "step ms", "samples/s",
                                             "GFLOP/s", "vs eager"))
        for label, t in rows:
            if t is None:
                print(label)
                continue
            print("%-32s %10.3f %12.1f %10.1f %11.2fx" %
                  (label, t * 1e3, batch / t, flops / t / 1e9, reference / t))
        if base:
            print("this build / baseline: K=1 %.3f, K=2 M=8 %.3f" %
                  (k1 / best["k1-base"], k2 / best["k2-base"]))
        times = re.search(r"kernel time per step.*\n(.*)\n", breakdown)
        if times:
            print("gpipe K=1 (%d BLAS thread%s), where the time goes (ms per "
                  "step):" % (blas, "s" if blas > 1 else ""))
            print("  " + times.group(1).strip())
        # Per GEMM shape against the ceiling of the cores it ran on.
        shapes = re.findall(r"^    (\d+ x \d+ x \d+ [NT][NT]): ([0-9.e+]+) "
                            r"calls, ([0-9.]+) ms, ([0-9.]+) GFLOP/s$",
                            breakdown, re.M)
        if shapes:
            print("  sgemm by shape (M x N x K): calls, ms per step, GFLOP/s, "
                  "%% of %d x the single-core ceiling" % blas)
            for shape, calls, ms, rate in shapes:
                share = float(rate) / (best_ceiling * blas)
                print("    %-22s %6s %8s %8s %5.0f%%%s" % (
                    shape, calls, ms, rate, 100 * share,
                    "" if share >= 0.6 else "  " + why_slow(
                        shape, float(rate), best_ceiling, blas)))
        summary.append(
            "%s: gpipe K=1 %.2fx eager (best: %d thread%s)%s, K=2 M=8 %.2fx "
            "eager; on one core: gpipe K=1 at %.0f%% of the sgemm ceiling, "
            "K=2 M=8 %.2fx K=1" %
            (name, reference / k1, best_threads,
             "s" if best_threads > 1 else "",
             ", %.2fx torch.compile" % (compiled / k1) if compiled else "",
             reference / k2, 100 * flops / k1_one / 1e9 / best_ceiling,
             k1_one / k2))
    print("\n## summary (ceiling %.1f GFLOP/s)" % best_ceiling)
    for line in summary:
        print(line)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
