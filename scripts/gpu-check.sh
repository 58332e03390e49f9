#!/usr/bin/env bash
#===- gpu-check.sh - What a person with an NVIDIA GPU runs once ------------===#
#
# Builds gpipe with the CUDA backend required (-DGPIPE_ENABLE_CUDA=ON) into
# build-gpu/ and checks it on the GPU, printing one summary table (also
# written to build-gpu/gpu-check.md for docs/GPU.md):
#
#   correctness  the CUDA kernel tests (every kernel against the CPU kernel,
#                run twice for bitwise repeatability; none may skip) and the
#                lit tests of test/CUDA (training on the GPU against the CPU
#                backend within 1e-4, run-to-run and K=1 vs K=3/4 bitwise,
#                NCCL on a one-process communicator, MPI host staging,
#                non-finite values found on the device)
#   speed        cuBLAS GEMMs at the model's shapes vs a large-GEMM ceiling
#                measured in the same run; training throughput of a GPT that
#                fills the GPU, K=1 and K=4 stages on the shared GPU, with
#                MFU; the same model in PyTorch eager when torch imports
#   memcheck     compute-sanitizer on one tiny training step
#
# Environment: BUILD_DIR (default build-gpu), GPT (the gpt preset options of
# the throughput runs), STEPS (timed steps per run).
#
#===-----------------------------------------------------------------------===#
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build-gpu}"
gpt="${GPT:---preset gpt --depth 8 --width 1024 --heads 16 --seq-len 256 --batch 64 --microbatches 8}"
steps="${STEPS:-12}"
start=$(date +%s)
status=0
fail() { echo "gpu-check: FAILED: $*"; status=1; }

"$root/scripts/setup.sh" || exit 1
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit -DGPIPE_ENABLE_CUDA=ON || exit 1
ninja -C "$build" -j"$(nproc)" || exit 1
bin="$build/bin"
work="$build/gpu-check"
rm -rf "$work" && mkdir -p "$work"
gpu="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
echo
echo "== GPU: ${gpu:-nvidia-smi not available} =="

# Correctness: kernels.
"$build/runtime/GPipeRuntimeCUDATests" > "$work/kernels.log" 2>&1 || fail "CUDA kernel tests"
k_pass=$(grep -cE '^\[       OK \] .*\([0-9]+ ms\)$' "$work/kernels.log")
k_fail=$(grep -cE '^\[  FAILED  \] .*\([0-9]+ ms\)$' "$work/kernels.log")
k_skip=$(grep -cE '^\[  SKIPPED \] .*\([0-9]+ ms\)$' "$work/kernels.log")
[ "$k_skip" -eq 0 ] || fail "$k_skip CUDA kernel tests skipped (no working GPU?)"
grep -E '^\[  FAILED  \]|Failure|Expected' "$work/kernels.log" | head -20

# Correctness: training on the GPU (lit, test/CUDA; must run, not skip).
/usr/lib/llvm-22/bin/lit -sv "$build/test/CUDA" > "$work/lit.log" 2>&1 || fail "lit test/CUDA"
grep -q 'PASS: GPIPE :: CUDA/train.test' "$work/lit.log" || { fail "CUDA/train.test did not pass"; grep -A40 'CUDA/train.test' "$work/lit.log" | tail -40; }

# The throughput model's sizes.
opt() { python3 -c "import sys; a=sys.argv[1].split(); print(a[a.index(sys.argv[2])+1] if sys.argv[2] in a else sys.argv[3])" "$gpt" "$@"; }
depth=$(opt --depth 2); width=$(opt --width 64); heads=$(opt --heads 4)
seq=$(opt --seq-len 64); batch=$(opt --batch 8); micro=$(opt --microbatches 1)

# Speed: GEMMs at the throughput model's shapes (one micro-batch's tokens).
"$build/bench/cuda_gemm_bench" --width "$width" --seq "$seq" \
  --microbatch $((batch / micro)) > "$work/gemm.log" 2>&1 || fail "cuda_gemm_bench"
cat "$work/gemm.log"
ceiling=$(awk '/ceiling 8192/ { print $(NF - 1) }' "$work/gemm.log")
gemm_line=$(awk '/ceiling 8192/ { c = $(NF - 1); next }
  $NF ~ /^[0-9.]+$/ && NF >= 6 { name = $1; for (i = 2; i <= NF - 5; ++i) name = name " " $i
    if (min == "" || $NF + 0 < min + 0) { min = $NF; low = name } }
  END { printf "ceiling %s TFLOP/s (8192^3); model shapes >= %s of it (lowest: %s; target >= 0.9)", c, min, low }' "$work/gemm.log")

# Speed: training throughput, K=1 and K=4 on the shared GPU.
median_sps() { # the median samples/s of the steps after the first 3
  awk '/^ +[0-9]+ +[0-9.na-]+ +[0-9.]+ / { if ($1 > 3) print $3 }' "$1" \
    | sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}
total=$((steps + 3))
for p in fp32 bf16; do
  for k in 1 4; do
    "$bin/gpipe-compile" $gpt --stages $k --precision $p --target cuda \
      -o "$work/gpt-$p-k$k.so" > "$work/compile-$p-k$k.log" 2>&1 \
      || fail "compiling the $p K=$k GPT"
    "$bin/gpipe-run" "$work/gpt-$p-k$k.so" --steps "$total" --trace "$work/gpt-$p-k$k.json" \
      > "$work/run-$p-k$k.log" 2>&1 || { fail "training the $p K=$k GPT"; tail -5 "$work/run-$p-k$k.log"; }
    grep -E 'DIFFERENT' "$work/run-$p-k$k.log" && fail "$p K=$k arena measured != planned"
  done
done
sps1=$(median_sps "$work/run-fp32-k1.log")
sps4=$(median_sps "$work/run-fp32-k4.log")
bsps1=$(median_sps "$work/run-bf16-k1.log")
bsps4=$(median_sps "$work/run-bf16-k4.log")
# Model FLOPs per sample (Kaplan et al. 2020, Table 1; PaLM appendix B):
# T * (6 N + 12 L T d) for N non-embedding parameters, L layers, T tokens,
# width d; recomputation is not counted (model FLOPs, not hardware FLOPs).
mfu_line=$(python3 - "$sps1" "$sps4" "$bsps1" "$bsps4" "$depth" "$width" "$seq" "${ceiling:-0}" <<'EOF'
import sys
sps1, sps4, bsps1, bsps4, L, d, T, ceiling = map(float, sys.argv[1:])
N = 12 * L * d * d + 65 * d  # blocks (qkv, proj, fc, proj) + head
flops = T * (6 * N + 12 * L * T * d)
# H200 SXM datasheet peaks: fp32 (non-tensor) 67 TFLOP/s, dense bf16 tensor
# 989 TFLOP/s.
for name, peak, runs in (("fp32", 67e12, (sps1, sps4)),
                         ("bf16", 989e12, (bsps1, bsps4))):
    for k, sps in zip((1, 4), runs):
        tf = sps * flops / 1e12
        ceil = (f", {tf / ceiling:.2f} of the fp32 GEMM ceiling"
                if ceiling > 0 and name == "fp32" else "")
        print(f"{name} K={k}: {sps:.1f} samples/s, {tf:.1f} TFLOP/s model, "
              f"MFU {tf * 1e12 / peak:.3f} of {peak / 1e12:.0f} TFLOP/s{ceil}")
    ratio = runs[1] / runs[0] if runs[0] else 0
    print(f"{name} K=4 / K=1 throughput: {ratio:.3f} (target >= 0.9)")
EOF
)

# PyTorch eager on the same model, when torch is there.
torch_line="not installed (python3 -c 'import torch' fails); no ratio"
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  torch_line=""
  for p in fp32 bf16; do
    python3 "$root/bench/torch_gpt_eager.py" --depth "$depth" --width "$width" \
      --heads "$heads" --seq-len "$seq" --batch "$batch" --steps "$steps" \
      --dtype $p > "$work/torch-$p.log" 2>&1 || fail "PyTorch eager $p"
    tsps=$(sed -nE 's/.*: ([0-9.]+) samples\/s.*/\1/p' "$work/torch-$p.log")
    mine=$([ $p = fp32 ] && echo "$sps1" || echo "$bsps1")
    torch_line="$torch_line PyTorch eager $p: ${tsps:-?} samples/s, gpipe K=1 / PyTorch = $(python3 -c "print(f'{$mine / ${tsps:-0}:.3f}' if ${tsps:-0} else '?')");"
  done
  torch_line="$torch_line (target: bf16 >= 1)"
fi

# Memcheck of one tiny training step.
sanitizer=""
for c in "$(command -v compute-sanitizer || true)" /usr/local/cuda/bin/compute-sanitizer \
         /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  if [ -n "$c" ] && [ -x "$c" ]; then sanitizer="$c"; break; fi
done
memcheck="compute-sanitizer: not found (PATH, /usr/local/cuda)"
if [ -n "$sanitizer" ]; then
  "$bin/gpipe-compile" --preset gpt --depth 1 --width 32 --heads 2 --seq-len 8 \
    --batch 4 --microbatches 2 --stages 2 --target cuda --quiet -o "$work/tiny.so"
  if "$sanitizer" --tool memcheck --error-exitcode 3 "$bin/gpipe-run" "$work/tiny.so" \
       --steps 1 --quiet > "$work/memcheck.log" 2>&1; then
    memcheck="compute-sanitizer memcheck, one K=2 step: $(grep -m1 'ERROR SUMMARY' "$work/memcheck.log" || echo clean)"
  else
    fail "compute-sanitizer memcheck"
    memcheck="compute-sanitizer memcheck: $(grep -m1 'ERROR SUMMARY' "$work/memcheck.log" || tail -1 "$work/memcheck.log")"
  fi
fi

{
  echo "# gpipe GPU check, $(date -u +%Y-%m-%d), ${gpu:-unknown GPU}"
  echo
  echo "| check | result |"
  echo "|---|---|"
  echo "| CUDA kernels vs CPU kernels | $k_pass passed, $k_fail failed, $k_skip skipped |"
  echo "| lit test/CUDA | $(grep -E '^\s*(Passed|Failed|Unsupported)' "$work/lit.log" | tr -s ' ' | tr '\n' ' ') |"
  echo "| cuBLAS fp32 GEMM | $gemm_line |"
  echo "| training model | gpipe-compile $gpt, $total steps, median samples/s after the first 3 |"
  echo "$mfu_line" | sed -E 's/^([^:]*): (.*)$/| \1 | \2 |/'
  echo "| PyTorch eager | $torch_line |"
  echo "| memcheck | $memcheck |"
  echo
  echo "$(($(date +%s) - start)) s in all; exit status $status"
} | tee "$build/gpu-check.md"
exit "$status"
