#!/usr/bin/env bash
#===- gpu-check.sh - The check of the CUDA backend on an NVIDIA GPU -------===#
#
# Runs from a bundle that scripts/gpu-bundle.sh prepared on a build machine,
# with nothing else: no compiler, LLVM, network, OpenBLAS or Open MPI on the
# GPU machine. Without --bundle it first builds one (scripts/gpu-bundle.sh,
# which needs this checkout's build dependencies) and then checks it.
#
#   libraries    every binary and model resolves every shared library from
#                the bundle's lib/ and the machine's CUDA (ldd)
#   kernels      every CUDA kernel against the CPU kernel, run twice for
#                bitwise repeatability (GPipeRuntimeCUDATests; none may skip)
#   training     test/CUDA/train.test from the bundle: GPU first-step
#                gradients and parameters after 3 steps against the bundle's
#                CPU references within 1e-4 (bf16: 2e-2), Adam and momentum,
#                run to run and K=1 vs K=3/4 bitwise (fp32 and bf16), arenas
#                equal to the plan, a NaN found on the device; NCCL with one
#                process and MPI staging when mpirun is on PATH
#   GEMMs        cuBLAS at the throughput model's shapes vs an 8192^3 ceiling
#   throughput   the GPT of bundle.env, K=1 and K=4 on the shared GPU, fp32
#                and bf16, samples/s and MFU; PyTorch eager on the same model
#                when torch sees the GPU
#   memcheck     compute-sanitizer on one tiny K=2 step
#
# Without a GPU every GPU part reports "no device" and what does not need
# one still has to pass: every library and kernel symbol resolves (each
# model is loaded and refused with the no-GPU message), the kernel tests'
# argument checks, the CPU references read by the comparison.
#
# CUDA libraries (cudart, cuBLAS, NCCL) are the machine's: the first folder
# holding each of libcudart.so.13, libcublas.so.13, libcublasLt.so.13 and
# libnccl.so.2 among $CUDA_HOME, /usr/local/cuda*/{lib64,lib,
# targets/x86_64-linux/lib}, then the lib/ folders of the nvidia-* Python
# wheels (python3 -c 'import nvidia; print(nvidia.__path__)': nvidia/*/lib,
# nvidia/cu13/lib) and torch/lib, then the linker cache (ldconfig -p);
# those folders go on gpipe's binaries' LD_LIBRARY_PATH after the bundle's
# lib/.
#
# Usage: gpu-check.sh [--bundle DIR] [--out DIR]
#   --out  where the table (gpu-check.md) and the logs go; default $OUT
#          when set (a folder the caller collects), else gpu-check/
#          beside the bundle (build-gpu/gpu-check/)
# Environment: STEPS (timed steps per throughput run, default 12), BUDGET
# (seconds after which the speed parts are skipped, default 480),
# GPU_CHECK_STRICT_LIBS=1 (every library must come from the bundle, the
# CUDA folders found or the C/C++ base system; the CI test sets it).
# Exit status 0 when every part that ran passed.
#
#===-----------------------------------------------------------------------===#
set -uo pipefail
bundle=""
out="${OUT:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^#===-----/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -z "$bundle" ]; then
  if [ -f "$here/bundle.env" ]; then
    bundle="$here"                     # the copy inside a bundle
  else
    "$here/gpu-bundle.sh" || exit 1
    bundle="$here/../build-gpu/gpu-bundle"
  fi
fi
bundle="$(cd "$bundle" && pwd)" || exit 1
[ -f "$bundle/bundle.env" ] || { echo "gpu-check: $bundle is not a bundle (no bundle.env)" >&2; exit 1; }
# shellcheck source=/dev/null
. "$bundle/bundle.env"
out="${out:-$(dirname "$bundle")/gpu-check}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
work="$out/logs"
rm -rf "$work" && mkdir -p "$work"
steps="${STEPS:-12}"
start=$(date +%s)
status=0
fail() { echo "gpu-check: FAILED: $*"; status=1; return 1; }
# The device machine ends a command after 10 minutes: past BUDGET seconds
# (default 480) the remaining speed parts are skipped so the table is written.
budget="${BUDGET:-480}"
in_time() { [ $(($(date +%s) - start)) -lt "$budget" ]; }
late="skipped: past the ${budget} s budget"
bin="$bundle/bin"
models="$bundle/models"
ref="$bundle/ref"
compare() { python3 "$bundle/tools/compare-safetensors.py" "$@"; }
mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader)

# The carried libraries, unpacked into a temporary folder (not the bundle:
# it must stay small enough to carry) with Python (the machine may lack xz);
# a lib/ already in the bundle is used as it is.
libdir="$bundle/lib"
if [ ! -d "$libdir" ]; then
  libdir="$(mktemp -d)/lib"
  trap 'rm -rf "${libdir%/lib}"' EXIT
  python3 -c 'import sys, tarfile
t = tarfile.open(sys.argv[1])
# The data filter where Python has it (3.12 warns without a filter).
t.extractall(sys.argv[2], **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))' \
    "$bundle/lib.tar.xz" "$libdir.tmp" && mv "$libdir.tmp" "$libdir" \
    || { echo "gpu-check: cannot unpack $bundle/lib.tar.xz" >&2; exit 1; }
fi

# The machine's CUDA libraries (see the header for the order).
cuda_candidates() {
  local c
  for c in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-13*; do
    [ -n "$c" ] && printf '%s\n' "$c/lib64" "$c/lib" "$c/targets/x86_64-linux/lib"
  done
  python3 - <<'EOF' 2>/dev/null
import glob, os
roots = []
try:
    import nvidia
    roots = list(nvidia.__path__)
except Exception:
    pass
for r in roots:
    for d in sorted(glob.glob(os.path.join(r, "*", "lib"))):
        print(d)
try:
    import importlib.util
    spec = importlib.util.find_spec("torch")
    if spec and spec.origin:
        print(os.path.join(os.path.dirname(spec.origin), "lib"))
except Exception:
    pass
EOF
}
cuda_dirs=()
cuda_where=""
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  found=""
  while read -r d; do
    if [ -e "$d/$lib" ]; then found="$d"; break; fi
  done < <(cuda_candidates)
  if [ -z "$found" ]; then
    found="$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l { print $NF; exit }')"
    found="${found%/*}"
  fi
  cuda_where="$cuda_where $lib: ${found:-not found};"
  if [ -n "$found" ] && [[ " ${cuda_dirs[*]} " != *" $found "* ]]; then cuda_dirs+=("$found"); fi
done
ld_path="$libdir"
for d in "${cuda_dirs[@]}"; do ld_path="$ld_path:$d"; done
# Only gpipe's binaries see it: the bundle's older libz or OpenBLAS must not
# shadow the machine's for Python and PyTorch.
withlibs=(env "LD_LIBRARY_PATH=$ld_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")

gpu="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
# A GPU: nvidia-smi lists one, or (without nvidia-smi) a kernel test runs
# rather than skipping.
have_gpu=0
if command -v nvidia-smi > /dev/null; then
  if nvidia-smi -L 2>/dev/null | grep -q 'GPU 0'; then have_gpu=1; fi
elif "${withlibs[@]}" "$bin/GPipeRuntimeCUDATests" --gtest_filter='CUDAKernels.Binary' 2>&1 \
       | grep -qE '^\[       OK \] CUDAKernels.Binary'; then
  have_gpu=1
  gpu="a GPU (no nvidia-smi)"
fi
echo "== GPU: ${gpu:-none (nvidia-smi lists no GPU)} =="
echo "== CUDA libraries:$cuda_where =="
nodev="no device"

# Libraries: every binary and model resolves everything.
lib_line="all resolve"
base='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s)\.so'
for f in "$bin"/* "$models"/*.so; do
  # ldd, or the dynamic loader itself where libc-bin's ldd is missing.
  if command -v ldd > /dev/null; then
    "${withlibs[@]}" ldd "$f" > "$work/ldd.log" 2>&1
  else
    "${withlibs[@]}" /lib64/ld-linux-x86-64.so.2 --list "$f" > "$work/ldd.log" 2>&1
  fi
  missing=$(awk '/not found/ { print $1 }' "$work/ldd.log" | tr '\n' ' ')
  [ -z "$missing" ] || { fail "$(basename "$f"): libraries not found: $missing"; lib_line="missing: $missing"; }
  if [ "${GPU_CHECK_STRICT_LIBS:-0}" = 1 ]; then
    while read -r name path; do
      [[ "$name" =~ $base ]] && continue
      ok=0
      for d in "$libdir" "${cuda_dirs[@]}"; do
        [ "${path%/*}" -ef "$d" ] && ok=1
      done
      [ $ok = 1 ] || { fail "$(basename "$f"): $name comes from $path, outside the bundle and CUDA"; lib_line="outside: $name"; }
    done < <(awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' "$work/ldd.log")
  fi
done
echo "libraries: $lib_line"

# Kernels.
timeout 180 "${withlibs[@]}" "$bin/GPipeRuntimeCUDATests" > "$work/kernels.log" 2>&1 || fail "CUDA kernel tests"
k_pass=$(grep -cE '^\[       OK \] .*\([0-9]+ ms\)$' "$work/kernels.log")
k_fail=$(grep -cE '^\[  FAILED  \] .*\([0-9]+ ms\)$' "$work/kernels.log")
k_skip=$(grep -cE '^\[  SKIPPED \] .*\([0-9]+ ms\)$' "$work/kernels.log")
kernel_line="$k_pass passed, $k_fail failed, $k_skip skipped"
if [ $have_gpu = 1 ]; then
  [ "$k_skip" -eq 0 ] || fail "$k_skip CUDA kernel tests skipped on a GPU machine"
else
  kernel_line="$nodev ($k_skip skipped: $(grep -m1 -oE 'cudaError[A-Za-z]+' "$work/kernels.log" || echo '?')); $k_pass passed, $k_fail failed"
fi
[ "$k_pass" -gt 0 ] || fail "no CUDA kernel test passed"
grep -E '^\[  FAILED  \]|Failure|Expected' "$work/kernels.log" | head -20
echo "kernels: $kernel_line"

# Training (test/CUDA/train.test from the bundle).
run() { timeout 120 "${withlibs[@]}" "$bin/gpipe-run" "$@"; }
cmpf() { cmp "$1" "$2" > /dev/null || fail "$3: $(basename "$1") and $(basename "$2") differ"; }
closef() { # reference, result, tolerance, what
  compare "$1" "$2" --rtol "$3" > "$work/compare.log" 2>&1 \
    && grep -q ' 0 failed' "$work/compare.log" \
    || { fail "$4 (rtol $3): $(tail -1 "$work/compare.log")"; }
}
train_line=""
mpi_line=""
if [ $have_gpu = 1 ]; then
  t="$work/train"; mkdir -p "$t"
  m="$models"
  # shellcheck disable=SC2086
  {
    run "$m/small-k1.so" $TRAIN --save-grads "$t/g.k1.st" --save-params "$t/p.k1.st" > "$t/k1.log" 2>&1 || fail "small K=1"
    grep -q 'arena rank 0: .*: equal' "$t/k1.log" || fail "small K=1: arena not equal to the plan"
    closef "$ref/g.cpu.st" "$t/g.k1.st" 1e-4 "gradients GPU vs CPU"
    closef "$ref/p.cpu.st" "$t/p.k1.st" 1e-4 "parameters GPU vs CPU"
    run "$m/small-k1.so" $TRAIN --save-grads "$t/g.again.st" --quiet > /dev/null 2>&1 || fail "small K=1 again"
    cmpf "$t/g.k1.st" "$t/g.again.st" "run to run"
    run "$m/small-k4.so" $TRAIN --save-grads "$t/g.k4.st" --save-params "$t/p.k4.st" > "$t/k4.log" 2>&1 || fail "small K=4"
    [ "$(grep -c ': equal' "$t/k4.log")" -eq 4 ] || fail "small K=4: arenas not equal to the plan"
    cmpf "$t/g.k1.st" "$t/g.k4.st" "K=1 vs K=4"; cmpf "$t/p.k1.st" "$t/p.k4.st" "K=1 vs K=4"
    run "$m/small-k3-1f1b.so" $TRAIN --save-grads "$t/g.k3.st" --save-params "$t/p.k3.st" --quiet > /dev/null 2>&1 || fail "small K=3 1F1B"
    cmpf "$t/g.k1.st" "$t/g.k3.st" "K=1 vs K=3 1F1B"; cmpf "$t/p.k1.st" "$t/p.k3.st" "K=1 vs K=3 1F1B"
    run "$m/mlp-adam.so" --optimizer adam --steps 4 --save-params "$t/adam.st" --quiet > /dev/null 2>&1 || fail "MLP Adam"
    closef "$ref/adam.cpu.st" "$t/adam.st" 1e-4 "Adam GPU vs CPU"
    run "$m/mlp-adam.so" --optimizer momentum --steps 4 --save-params "$t/mom.st" --quiet > /dev/null 2>&1 || fail "MLP momentum"
    closef "$ref/mom.cpu.st" "$t/mom.st" 1e-4 "momentum GPU vs CPU"
    run "$m/small-bf16-k1.so" $TRAIN --save-grads "$t/g.bf16.k1.st" --quiet > /dev/null 2>&1 || fail "bf16 K=1"
    closef "$ref/g.bf16.cpu.st" "$t/g.bf16.k1.st" 2e-2 "bf16 gradients GPU vs CPU bf16"
    closef "$ref/g.cpu.st" "$t/g.bf16.k1.st" 2e-2 "bf16 gradients GPU vs CPU fp32"
    run "$m/small-bf16-k4.so" $TRAIN --save-grads "$t/g.bf16.k4.st" --quiet > /dev/null 2>&1 || fail "bf16 K=4"
    cmpf "$t/g.bf16.k1.st" "$t/g.bf16.k4.st" "bf16 K=1 vs K=4"
    if run "$m/small-k4.so" --steps 2 --inject-nan rank=2,step=2,mb=1 > "$t/nan.log" 2>&1; then
      fail "an injected NaN was not found"
    else
      grep -q 'non-finite activation (nan at element 0) leaving stage 2 for micro-batch 1' "$t/nan.log" \
        || fail "the injected NaN was not named: $(tail -1 "$t/nan.log")"
    fi
  } > "$t/train.log" 2>&1
  grep FAILED "$t/train.log"
  tfails=$(grep -c FAILED "$t/train.log")
  [ "$tfails" -eq 0 ] || status=1
  train_line="$tfails failures (GPU vs CPU 1e-4, bf16 2e-2, Adam, momentum; run to run, K=1 vs K=4 and K=3 1F1B bitwise, fp32 and bf16; arenas; NaN on the device)"
  if command -v mpirun > /dev/null; then
    # shellcheck disable=SC2086
    timeout 300 "${mpirun_cmd[@]}" -x "${withlibs[1]}" -np 1 "$bin/gpipe-run" "$m/small-k1.so" $TRAIN --transport nccl \
      --save-grads "$t/g.nccl.st" --quiet > "$t/nccl.log" 2>&1 || fail "NCCL one process"
    cmpf "$t/g.k1.st" "$t/g.nccl.st" "NCCL vs local"
    # shellcheck disable=SC2086
    timeout 300 "${mpirun_cmd[@]}" -x "${withlibs[1]}" -np 4 "$bin/gpipe-run" "$m/small-k4.so" $TRAIN --transport mpi --gpu 0 \
      --save-grads "$t/g.mpi.st" --quiet > "$t/mpi.log" 2>&1 || fail "MPI staging"
    cmpf "$t/g.k1.st" "$t/g.mpi.st" "MPI staging vs local"
    mpi_line="NCCL one process and MPI staging (4 processes) bitwise equal to local: $([ -s "$t/g.mpi.st" ] && cmp -s "$t/g.k1.st" "$t/g.mpi.st" && cmp -s "$t/g.k1.st" "$t/g.nccl.st" && echo yes || echo no)"
    # Data parallelism: threads refuse device memory; over NCCL it needs one
    # GPU per process, so a 1-GPU machine runs D=1 only.
    run "$m/small-d2.so" --steps 1 > "$t/d2-local.log" 2>&1 \
      && fail "data parallelism on rank threads ran with GPU arenas"
    grep -q 'needs the arenas in host memory' "$t/d2-local.log" \
      || fail "data parallelism on threads: $(tail -1 "$t/d2-local.log")"
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
    if [ "${gpus:-0}" -ge 2 ]; then
      # shellcheck disable=SC2086
      timeout 300 "${mpirun_cmd[@]}" -x "${withlibs[1]}" -np 2 "$bin/gpipe-run" "$m/small-d2.so" $TRAIN --transport nccl \
        --save-grads "$t/g.d2.st" --quiet > "$t/d2.log" 2>&1 || fail "NCCL data parallel (2 GPUs)"
      closef "$t/g.k1.st" "$t/g.d2.st" 1e-5 "NCCL data parallel vs one replica"
      mpi_line="$mpi_line; data parallel D=2 over NCCL (2 GPUs) within 1e-5 of D=1: $([ -s "$t/g.d2.st" ] && echo checked || echo no)"
    else
      mpi_line="$mpi_line; data parallel over NCCL not run: it needs one GPU per process and this machine has ${gpus:-0} (D=1 only); threads refuse GPU arenas clearly"
    fi
  else
    mpi_line="not run: no mpirun on this machine (the bundle carries Open MPI's libraries, not its launcher)"
  fi
else
  # No GPU: each model loads (every gpipe_rt_cuda_* symbol resolves) and is
  # refused with the no-GPU message; the references read and compare.
  loaded=0
  for f in "$models"/*.so; do
    if timeout 60 "${withlibs[@]}" "$bin/gpipe-run" "$f" --steps 1 > "$work/load.log" 2>&1; then
      fail "$(basename "$f") trained without a GPU"
    elif grep -q 'no usable CUDA GPU for this --target cuda model' "$work/load.log"; then
      loaded=$((loaded + 1))
    else
      fail "$(basename "$f") did not load: $(tail -1 "$work/load.log")"
    fi
  done
  refs=0
  for r in "$ref"/*.st; do
    closef "$r" "$r" 1e-4 "reference $(basename "$r") against itself" && refs=$((refs + 1))
  done
  train_line="$nodev; $loaded of $(ls "$models"/*.so | wc -l) models load and are refused clearly; $refs CPU references compare"
  mpi_line="$nodev"
fi
echo "training: $train_line"

# The throughput model's sizes.
opt() { python3 -c "import sys; a=sys.argv[1].split(); print(a[a.index(sys.argv[2])+1] if sys.argv[2] in a else sys.argv[3])" "$GPT" "$@"; }
depth=$(opt --depth 2); width=$(opt --width 64); heads=$(opt --heads 4)
seq=$(opt --seq-len 64); batch=$(opt --batch 8); micro=$(opt --microbatches 1)

# GEMMs at the throughput model's shapes (one micro-batch's tokens).
gemm_line="$nodev"
ceiling=0
timeout 120 "${withlibs[@]}" "$bin/cuda_gemm_bench" --width "$width" --seq "$seq" \
  --microbatch $((batch / micro)) > "$work/gemm.log" 2>&1
gemm_status=$?
if [ $have_gpu = 1 ]; then
  [ $gemm_status = 0 ] || fail "cuda_gemm_bench"
  cat "$work/gemm.log"
  ceiling=$(awk '/ceiling 8192/ { print $(NF - 1) }' "$work/gemm.log")
  gemm_line=$(awk '/ceiling 8192/ { c = $(NF - 1); next }
    $NF ~ /^[0-9.]+$/ && NF >= 6 { name = $1; for (i = 2; i <= NF - 5; ++i) name = name " " $i
      if (min == "" || $NF + 0 < min + 0) { min = $NF; low = name } }
    END { printf "ceiling %s TFLOP/s (8192^3); model shapes >= %s of it (lowest: %s; target >= 0.9)", c, min, low }' "$work/gemm.log")
elif [ $gemm_status != 2 ]; then
  fail "cuda_gemm_bench without a GPU: exit $gemm_status, not 2 (no usable GPU)"
fi
echo "GEMMs: $gemm_line"

# Throughput, K=1 and K=4 on the shared GPU.
median_sps() { # the median samples/s of the steps after the first 3
  awk '/^ +[0-9]+ +[0-9.na-]+ +[0-9.e+-]+ +[0-9.]+ / { if ($1 > 3) print $4 }' "$1" \
    | sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}
total=$((steps + 3))
mfu_line="| throughput | $nodev |"
torch_line="$nodev"
if [ $have_gpu = 1 ] && ! in_time; then
  mfu_line="| throughput | $late |"; torch_line="$late"
elif [ $have_gpu = 1 ]; then
  for p in fp32 bf16; do
    for k in 1 4; do
      timeout 150 "${withlibs[@]}" "$bin/gpipe-run" "$models/gpt-$p-k$k.so" --steps "$total" \
        > "$work/run-$p-k$k.log" 2>&1 || { fail "training the $p K=$k GPT"; tail -5 "$work/run-$p-k$k.log"; }
      grep -E 'DIFFERENT' "$work/run-$p-k$k.log" && fail "$p K=$k arena measured != planned"
    done
  done
  sps1=$(median_sps "$work/run-fp32-k1.log"); sps4=$(median_sps "$work/run-fp32-k4.log")
  bsps1=$(median_sps "$work/run-bf16-k1.log"); bsps4=$(median_sps "$work/run-bf16-k4.log")
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
        print(f"| {name} K={k} | {sps:.1f} samples/s, {tf:.1f} TFLOP/s model, "
              f"MFU {tf * 1e12 / peak:.3f} of {peak / 1e12:.0f} TFLOP/s{ceil} |")
    ratio = runs[1] / runs[0] if runs[0] else 0
    print(f"| {name} K=4 / K=1 | {ratio:.3f} (target >= 0.9) |")
EOF
)
  torch_line="not installed or no GPU for torch (python3 -c 'import torch; torch.cuda.is_available()'); no ratio"
  if ! in_time; then
    torch_line="$late"
  elif python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    torch_line=""
    for p in fp32 bf16; do
      timeout 150 python3 "$bundle/tools/torch_gpt_eager.py" --depth "$depth" --width "$width" \
        --heads "$heads" --seq-len "$seq" --batch "$batch" --steps "$steps" \
        --dtype $p > "$work/torch-$p.log" 2>&1 || fail "PyTorch eager $p"
      tsps=$(sed -nE 's/.*: ([0-9.]+) samples\/s.*/\1/p' "$work/torch-$p.log")
      mine=$([ $p = fp32 ] && echo "$sps1" || echo "$bsps1")
      torch_line="$torch_line PyTorch eager $p: ${tsps:-?} samples/s, gpipe K=1 / PyTorch = $(python3 -c "print(f'{$mine / ${tsps:-0}:.3f}' if ${tsps:-0} else '?')");"
    done
    torch_line="$torch_line (target: bf16 >= 1)"
  fi
fi

# Memcheck of one tiny training step.
memcheck="$nodev"
if [ $have_gpu = 1 ]; then
  sanitizer=""
  for c in "$(command -v compute-sanitizer || true)" "${CUDA_HOME:-/nonexistent}/bin/compute-sanitizer" \
           /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [ -n "$c" ] && [ -x "$c" ]; then sanitizer="$c"; break; fi
  done
  memcheck="compute-sanitizer: not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda)"
  if ! in_time; then
    memcheck="$late"
  elif [ -n "$sanitizer" ]; then
    if timeout 180 "${withlibs[@]}" "$sanitizer" --tool memcheck --error-exitcode 3 "$bin/gpipe-run" "$models/tiny-k2.so" \
         --steps 1 --quiet > "$work/memcheck.log" 2>&1; then
      memcheck="compute-sanitizer memcheck, one K=2 step: $(grep -m1 'ERROR SUMMARY' "$work/memcheck.log" || echo clean)"
    else
      fail "compute-sanitizer memcheck"
      memcheck="compute-sanitizer memcheck: $(grep -m1 'ERROR SUMMARY' "$work/memcheck.log" || tail -1 "$work/memcheck.log")"
    fi
  fi
fi

{
  echo "# gpipe GPU check, $(date -u +%Y-%m-%d), ${gpu:-no GPU}"
  echo
  echo "Bundle: $(sed -n 's/^commit: //p' "$bundle/MANIFEST"); CUDA libraries:$cuda_where"
  echo
  echo "| check | result |"
  echo "|---|---|"
  echo "| libraries | $lib_line |"
  echo "| CUDA kernels vs CPU kernels | $kernel_line |"
  echo "| training vs CPU references | $train_line |"
  echo "| NCCL, MPI staging | $mpi_line |"
  echo "| cuBLAS fp32 GEMM | $gemm_line |"
  echo "| training model | gpipe-compile $GPT, $total steps, median samples/s after the first 3 |"
  echo "$mfu_line"
  echo "| PyTorch eager | $torch_line |"
  echo "| memcheck | $memcheck |"
  echo
  echo "$(($(date +%s) - start)) s in all; exit status $status"
} | tee "$out/gpu-check.md"
exit "$status"
