#!/usr/bin/env bash
#===- fuzz.sh - Build and run gpipe's libFuzzer targets -------------------===#
#
# Usage: scripts/fuzz.sh [seconds-per-target] [target...]
#
# Configures and builds the clang build in build-san/ (GPIPE_ENABLE_FUZZERS:
# ASan, UBSan and libFuzzer coverage; the same build scripts/sanitize.sh asan
# uses) and runs each fuzz target (onnx, mlir, safetensors, checkpoint,
# metadata; all by default) for the given time (60 s by default), starting
# from the seeds in fuzz/corpus/<target>/. New inputs go to a working corpus
# in build-san/fuzz/work/<target>/, crashes to build-san/fuzz/findings/.
# Prints, per target, the executions run and the findings, and exits
# non-zero when any target found something. BUILD_DIR and JOBS override the
# build folder and the build's parallelism; FUZZ_MAX_LEN the largest input
# (4096 bytes by default); FUZZ_ARGS adds libFuzzer flags.
#
#===-----------------------------------------------------------------------===#
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build-san}"
jobs="${JOBS:-$(nproc)}"
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(onnx mlir safetensors checkpoint metadata)
fi
for t in "${targets[@]}"; do
  if [ ! -d "$root/fuzz/corpus/$t" ]; then
    echo "fuzz: unknown target '$t' (onnx, mlir, safetensors, checkpoint, metadata)"
    exit 2
  fi
done

"$root/scripts/setup.sh" >/dev/null || { echo "fuzz: setup failed"; exit 1; }
for tool in clang-22 clang++-22; do
  command -v "$tool" >/dev/null || {
    echo "fuzz: $tool not found (apt-get install clang-22 libclang-rt-22-dev)"
    exit 1
  }
done
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22 \
    "${launcher[@]}" \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DGPIPE_ENABLE_CUDA=OFF -DGPIPE_ENABLE_FUZZERS=ON >/dev/null ||
    { echo "fuzz: configure failed"; exit 1; }
fi
fuzzers=()
for t in "${targets[@]}"; do fuzzers+=("gpipe-fuzz-$t"); done
cmake --build "$build" -j "$jobs" --target "${fuzzers[@]}" ||
  { echo "fuzz: build failed"; exit 1; }

# Every sanitizer finding ends the run with a report; leaks too.
# allow_user_poisoning=0: see fuzz/FuzzContext.h (uninstrumented MLIR).
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allow_user_poisoning=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

total_found=0
summary=()
for t in "${targets[@]}"; do
  work="$build/fuzz/work/$t"
  findings="$build/fuzz/findings/$t"
  mkdir -p "$work" "$findings"
  log="$build/fuzz/$t.log"
  echo "== fuzz $t (${seconds} s) =="
  # -rss_limit_mb: the MLIR targets keep a context's uniqued storage alive
  # only for one input, so 2 GB flags a real leak or blow-up.
  # shellcheck disable=SC2086
  "$build/fuzz/gpipe-fuzz-$t" -max_total_time="$seconds" -print_final_stats=1 \
    -timeout=25 -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-4096}" \
    -artifact_prefix="$findings/" ${FUZZ_ARGS:-} \
    "$work" "$root/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
  # A crash, leak, timeout or out-of-memory leaves an artifact.
  found=$(grep -oE 'Test unit written to [^ ]+' "$log" | sort -u | wc -l)
  if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then found=1; fi
  if [ "$found" -gt 0 ]; then
    grep -E 'ERROR: |runtime error:|Test unit written to|SUMMARY' "$log" | head -5
    echo "   (full log: $log)"
  fi
  total_found=$((total_found + found))
  summary+=("$(printf '%-12s %10s executions, %d crashes' "$t" "${execs:-?}" "$found")")
done

echo
echo "== fuzz summary (${seconds} s per target) =="
printf '%s\n' "${summary[@]}"
echo "fuzz: $(( ${#targets[@]} - $(printf '%s\n' "${summary[@]}" | grep -vc ' 0 crashes$') )) passed, $(printf '%s\n' "${summary[@]}" | grep -vc ' 0 crashes$') failed"
[ "$total_found" -eq 0 ]
