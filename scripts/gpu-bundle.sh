#!/usr/bin/env bash
#===- gpu-bundle.sh - Prepare the GPU check for a machine without tools ---===#
#
# The GPU machines the check runs on have the CUDA toolkit (or its Python
# wheels), Python and PyTorch, but no network, LLVM/MLIR, OpenBLAS or Open
# MPI. This script builds gpipe with the CUDA backend required
# (-DGPIPE_ENABLE_CUDA=ON, into build-gpu/) and writes one folder,
# build-gpu/gpu-bundle/, from which scripts/gpu-check.sh --bundle runs with
# nothing else:
#
#   bin/       gpipe-run, libgpipe-cuda-backend.so (the CUDA backend module
#              gpipe-run loads from its own folder for --target cuda
#              models), GPipeRuntimeCUDATests, cuda_gemm_bench (stripped)
#   lib.tar.xz every shared library those need that is neither the C/C++
#              base system (libc, libm, libstdc++, libgcc_s, ...) nor CUDA
#              (cudart, cuBLAS, NCCL: the machine's own), found with ldd;
#              xz because OpenBLAS alone is 35 MB; the check unpacks it with
#              Python into a temporary folder on its binaries' LD_LIBRARY_PATH
#   models/    every --target cuda model the check trains, compiled here
#   ref/       the CPU target's results on the same models, seeds and data,
#              which the GPU's are compared against
#   tools/     compare-safetensors.py, torch_gpt_eager.py
#   gpu-check.sh, bundle.env (the settings the models and references were
#              made with), MANIFEST (commit, date, carried libraries)
#
# It prints the bundle's size, fails above 48 MiB (the GPU machines it targets
# take 64 MiB with the checkout) and prints the bundle's folder last.
#
# Usage: gpu-bundle.sh [--build-dir DIR] [--out DIR] [--no-build]
#   --no-build  use DIR's existing binaries (any build with the CUDA
#               backend), as the CI test does
# Environment: GPT (the gpt preset options of the throughput models).
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-gpu"
out=""
do_build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$(cd "$2" && pwd)"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,/^#===-----/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-bundle: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
out="${out:-$build/gpu-bundle}"
limit_mib=48
gpt="${GPT:---preset gpt --depth 8 --width 1024 --heads 16 --seq-len 256 --batch 64 --microbatches 8}"
# The training checks' models and settings (test/CUDA/train.test's).
small="--preset gpt --depth 2 --width 32 --heads 4 --seq-len 16 --batch 8 --microbatches 4 --quiet"
mlp="--preset mlp --depth 3 --batch 16 --microbatches 4 --stages 3 --optimizer adam --quiet"
train="--steps 3 --lr 0.1 --seed 7"
tiny="--preset gpt --depth 1 --width 32 --heads 2 --seq-len 8 --batch 4 --microbatches 2 --stages 2 --quiet"

if [ "$do_build" = 1 ]; then
  "$root/scripts/setup.sh"
  launcher=()
  if command -v ccache > /dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
              -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit -DGPIPE_ENABLE_CUDA=ON \
    "${launcher[@]}" > /dev/null
  cmake --build "$build" -j "${JOBS:-$(nproc)}" \
    --target gpipe-compile gpipe-run GPipeRuntimeCUDATests cuda_gemm_bench
fi

bins=("$build/bin/gpipe-run" "$build/bin/libgpipe-cuda-backend.so"
      "$build/runtime/GPipeRuntimeCUDATests"
      "$build/bench/cuda_gemm_bench")
for b in "${bins[@]}" "$build/bin/gpipe-compile"; do
  [ -x "$b" ] || { echo "gpu-bundle: $b missing (a build with -DGPIPE_ENABLE_CUDA=ON?)" >&2; exit 1; }
done
compile="$build/bin/gpipe-compile"
run="$build/bin/gpipe-run"

rm -rf "$out"
mkdir -p "$out/bin" "$out/models" "$out/ref" "$out/tools"
for b in "${bins[@]}"; do
  # strip keeps the dynamic symbol tables gpipe-run and the backend module
  # export to the models.
  strip -o "$out/bin/$(basename "$b")" "$b"
done

# Libraries to carry: everything ldd resolves that the GPU machine either
# has newer (the C and C++ runtimes) or brings itself (CUDA, NCCL).
base='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s)\.so'
cuda='^(libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia-[a-z-]*)\.so'
libs="$(mktemp -d)"
trap 'rm -rf "$libs"' EXIT
for b in "${bins[@]}"; do
  ldd "$b" | awk '$2 == "=>" { print $1, $3 }'
done | sort -u | while read -r name path; do
  if [[ "$name" =~ $base || "$name" =~ $cuda ]]; then continue; fi
  [ -f "$path" ] || { echo "gpu-bundle: $name not found here" >&2; exit 1; }
  cp -L "$path" "$libs/$name"
done
carried="$(cd "$libs" && ls | tr '\n' ' ')"
(cd "$libs" && tar -cf - -- *) | xz -T2 -6 > "$out/lib.tar.xz"

# The models. Training checks: the small GPT at K=1, 3 (1F1B, no remat)
# and 4, fp32 and bf16, and the Adam/momentum MLP; the memcheck's tiny
# step; the throughput GPT at K=1 and 4, fp32 and bf16.
c() { local name="$1"; shift; "$compile" "$@" --target cuda -o "$out/models/$name.so"; }
c small-k1 $small --stages 1
c small-k4 $small --stages 4
c small-k3-1f1b $small --stages 3 --schedule 1f1b --remat none
# Data parallelism over NCCL: 2 replicas of K=1 with the same global batch
# (one GPU per process: run where the machine has two).
c small-d2 $small --stages 1 --microbatches 2 --data-parallel 2
c small-bf16-k1 $small --stages 1 --precision bf16
c small-bf16-k4 $small --stages 4 --precision bf16
c mlp-adam $mlp
c tiny-k2 $tiny
for p in fp32 bf16; do
  for k in 1 4; do
    c "gpt-$p-k$k" $gpt --stages $k --precision $p --quiet
  done
done

# The CPU references, made here with --target cpu (same seed and data).
cpu="$(mktemp -d)"
trap 'rm -rf "$libs" "$cpu"' EXIT
ref() { "$run" "$@" --quiet > "$cpu/run.log" 2>&1 || { cat "$cpu/run.log" >&2; exit 1; }; }
"$compile" $small --stages 1 -o "$cpu/small.so"
ref "$cpu/small.so" $train --save-grads "$out/ref/g.cpu.st" --save-params "$out/ref/p.cpu.st"
"$compile" $small --stages 1 --precision bf16 -o "$cpu/small-bf16.so"
ref "$cpu/small-bf16.so" $train --save-grads "$out/ref/g.bf16.cpu.st"
"$compile" $mlp -o "$cpu/mlp.so"
ref "$cpu/mlp.so" --optimizer adam --steps 4 --save-params "$out/ref/adam.cpu.st"
ref "$cpu/mlp.so" --optimizer momentum --steps 4 --save-params "$out/ref/mom.cpu.st"

cp "$root/test/Utils/compare-safetensors.py" "$root/bench/torch_gpt_eager.py" "$out/tools/"
cp "$root/scripts/gpu-check.sh" "$out/gpu-check.sh"
{
  echo "# Written by scripts/gpu-bundle.sh: what the models and references were made with."
  printf 'GPT=%q\n' "$gpt"
  printf 'TRAIN=%q\n' "$train"
  printf 'CARRIED=%q\n' "$carried"
} > "$out/bundle.env"
{
  echo "gpipe GPU check bundle"
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with local changes)')"
  echo "made: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n)"
  echo "carried libraries: $carried"
  echo "not carried (the machine's own): C/C++ runtimes, libcudart, libcublas(Lt), libnccl, the driver"
} > "$out/MANIFEST"

bytes=$(du -sb "$out" | cut -f1)
echo "gpu-bundle: $(awk -v b="$bytes" 'BEGIN { printf "%.1f MiB", b / 1048576 }') ($bytes bytes; limit $limit_mib MiB); carried: $carried"
if [ "$bytes" -gt $((limit_mib * 1048576)) ]; then
  echo "gpu-bundle: FAILED: the bundle exceeds $limit_mib MiB" >&2
  exit 1
fi
echo "$out"
