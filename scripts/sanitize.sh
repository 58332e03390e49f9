#!/usr/bin/env bash
#===- sanitize.sh - Run gpipe's tests under the sanitizers ----------------===#
#
# Usage: scripts/sanitize.sh asan|tsan
#
#   asan  Builds everything in build-san/ with clang, AddressSanitizer and
#         UBSan (every UBSan finding fatal; the build scripts/fuzz.sh uses)
#         and runs the whole test suite there: lit (check-gpipe) and ctest.
#   tsan  Builds the runtime alone (runtime/ as its own CMake project) in
#         build-tsan/ with clang and ThreadSanitizer, runs its unit tests
#         (transports, the engine's rank threads, fault injection,
#         checkpoints) and the end-to-end tests that drive the rank threads
#         (test/E2E faults, checkpoint, mpi, schedules), with models compiled
#         by the normal build (build/, made first with scripts/build.sh) and
#         run by the instrumented gpipe-run.
#
# Ends with "<mode>: N passed, N failed" (each sanitizer report, kept under
# <build>/sanitizer-reports/, counts as a failure) and exits non-zero on any
# failure or report. The libraries that are not built here (MLIR, LLVM,
# OpenBLAS, Open MPI) are not instrumented; scripts/sanitizers/ holds the
# suppressions for what they do, each with its reason. JOBS sets the build's
# parallelism.
#
#===-----------------------------------------------------------------------===#
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${JOBS:-$(nproc)}"
mode="${1:-}"
supp="$root/scripts/sanitizers"
lit=/usr/lib/llvm-22/bin/lit

case "$mode" in
asan | tsan) ;;
*)
  echo "usage: scripts/sanitize.sh asan|tsan"
  exit 2
  ;;
esac

"$root/scripts/setup.sh" >/dev/null || { echo "sanitize: setup failed"; exit 1; }
for tool in clang-22 clang++-22; do
  command -v "$tool" >/dev/null || {
    echo "sanitize: $tool not found (apt-get install clang-22 libclang-rt-22-dev)"
    exit 1
  }
done
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# Prints the sanitizer reports under $reports and sets nreports to their
# count.
report_counts() {
  nreports=$(find "$reports" -type f | wc -l)
  if [ "$nreports" -gt 0 ]; then
    echo "== $nreports sanitizer report(s) in $reports =="
    for f in $(find "$reports" -type f | head -5); do
      echo "-- $f"
      grep -E 'ERROR|WARNING|runtime error|SUMMARY|^    #[0-4] ' "$f" | head -12
    done
  fi
}

# Sums lit's "Passed:" and failure lines of $log into lit_pass, lit_fail.
lit_counts() {
  lit_pass=$(grep -E '^\s*Passed\s*:' "$log" | awk -F: '{s+=$2} END {print s+0}')
  lit_fail=$(grep -E '^\s*(Failed|Unresolved|Timed Out|Unexpectedly Passed)\s*:' \
    "$log" | awk -F: '{s+=$2} END {print s+0}')
}

if [ "$mode" = asan ]; then
  build="${BUILD_DIR:-$root/build-san}"
  if [ ! -f "$build/build.ninja" ]; then
    cmake -G Ninja -S "$root" -B "$build" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22 \
      "${launcher[@]}" \
      -DLLVM_EXTERNAL_LIT="$lit" \
      -DGPIPE_ENABLE_CUDA=OFF -DGPIPE_ENABLE_FUZZERS=ON >/dev/null ||
      { echo "sanitize: configure failed"; exit 1; }
  fi
  cmake --build "$build" -j "$jobs" || { echo "sanitize: build failed"; exit 1; }

  # allow_user_poisoning=0: LLVM's allocator headers, inlined into our
  # instrumented code, poison memory the uninstrumented MLIR library then
  # uses (fuzz/FuzzContext.h).
  # Reports go to files under $reports as well as ending the process: a
  # test that expects a tool to fail (`not gpipe-run ...`) would otherwise
  # pass on a sanitizer's exit status.
  reports="$build/sanitizer-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  asan="allow_user_poisoning=0:abort_on_error=1:halt_on_error=1:log_path=$reports/report"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/report"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"

  # Leak detection is off for lit: its `gpipe-run --transport mpi` runs
  # initialize Open MPI, which keeps allocations until exit from plugins it
  # has unloaded by then (their frames are unnamed, so no suppression can
  # match them). The unit tests and the fuzz targets, which do not use MPI,
  # run with leak detection on.
  echo "== asan: lit =="
  ASAN_OPTIONS="$asan:detect_leaks=0" "$lit" -sv "$build/test" | tee "$log"
  lit_status=${PIPESTATUS[0]}
  lit_counts
  echo "== asan: ctest =="
  ASAN_OPTIONS="$asan:detect_leaks=1" \
    ctest --test-dir "$build" --output-on-failure | tee "$log"
  ctest_status=${PIPESTATUS[0]}
  ctest_total=$(sed -nE 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\2/p' "$log")
  ctest_fail=$(sed -nE 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/p' "$log")
  ctest_total=${ctest_total:-0}
  ctest_fail=${ctest_fail:-0}
  report_counts
  passed=$((lit_pass + ctest_total - ctest_fail))
  failed=$((lit_fail + ctest_fail + nreports))
  if [ "$lit_status" -ne 0 ] && [ "$lit_fail" -eq 0 ]; then failed=$((failed + 1)); fi
  if [ "$ctest_status" -ne 0 ] && [ "$ctest_fail" -eq 0 ]; then failed=$((failed + 1)); fi
  echo
  echo "asan: lit $lit_pass passed, $lit_fail failed; gtest $((ctest_total - ctest_fail)) passed, $ctest_fail failed; $nreports sanitizer reports"
  echo "asan: $passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit
fi

# tsan
build="${BUILD_DIR:-$root/build-tsan}"
normal="${NORMAL_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" >/dev/null || { echo "sanitize: the normal build failed"; exit 1; }
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root/runtime" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22 \
    "${launcher[@]}" \
    -DGPIPE_ENABLE_CUDA=OFF \
    -DCMAKE_C_FLAGS="-fsanitize=thread -gline-tables-only" \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread -gline-tables-only" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" \
    -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=thread" >/dev/null ||
    { echo "sanitize: configure failed"; exit 1; }
fi
cmake --build "$build" -j "$jobs" || { echo "sanitize: build failed"; exit 1; }

reports="$build/sanitizer-reports"
rm -rf "$reports" && mkdir -p "$reports"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:log_path=$reports/report"

echo "== tsan: runtime unit tests =="
ctest --test-dir "$build" --output-on-failure | tee "$log"
ctest_status=${PIPESTATUS[0]}
ctest_total=$(sed -nE 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\2/p' "$log")
ctest_fail=$(sed -nE 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/p' "$log")
ctest_total=${ctest_total:-0}
ctest_fail=${ctest_fail:-0}

# The end-to-end tests, through a lit site configuration like the normal
# build's but whose gpipe-run is the instrumented one.
tools="$build/lit-tools"
mkdir -p "$build/test" "$tools"
for tool in gpipe-opt gpipe-import gpipe-compile; do
  ln -sf "$normal/bin/$tool" "$tools/$tool"
done
ln -sf "$build/bin/gpipe-run" "$tools/gpipe-run"
sed -e "s|^config.gpipe_obj_root = .*|config.gpipe_obj_root = \"$build\"|" \
  -e "s|^config.gpipe_tools_dir = .*|config.gpipe_tools_dir = \"$tools\"|" \
  "$normal/test/lit.site.cfg.py" >"$build/test/lit.site.cfg.py"
echo "== tsan: end-to-end tests =="
e2e=()
for t in faults checkpoint mpi schedules; do e2e+=("$build/test/E2E/$t.test"); done
"$lit" -sv "${e2e[@]}" | tee "$log"
lit_status=${PIPESTATUS[0]}
lit_counts

report_counts
passed=$((lit_pass + ctest_total - ctest_fail))
failed=$((lit_fail + ctest_fail + nreports))
if [ "$lit_status" -ne 0 ] && [ "$lit_fail" -eq 0 ]; then failed=$((failed + 1)); fi
if [ "$ctest_status" -ne 0 ] && [ "$ctest_fail" -eq 0 ]; then failed=$((failed + 1)); fi
echo
echo "tsan: gtest $((ctest_total - ctest_fail)) passed, $ctest_fail failed; lit $lit_pass passed, $lit_fail failed; $nreports sanitizer reports"
echo "tsan: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
