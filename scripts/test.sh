#!/usr/bin/env bash
#===- test.sh - Set up, build and run every gpipe test --------------------===#
#
# Builds (scripts/build.sh), runs the lit suite (check-gpipe), the
# GoogleTest suite (ctest), the format gate (scripts/format.sh) and each
# fuzz target briefly (scripts/fuzz.sh; FUZZ_SECONDS per target, 30 by
# default, 0 to skip) and the adversarial suite (scripts/adversarial.py,
# about two minutes; ADVERSARIAL=0 skips it), and ends with one summary
# line over all of them.
#
#===-----------------------------------------------------------------------===#
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"

"$root/scripts/build.sh" || { echo "build failed"; exit 1; }

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

echo "== lit (check-gpipe) =="
/usr/lib/llvm-22/bin/lit -sv "$build/test" | tee "$log"
lit_status=${PIPESTATUS[0]}
lit_pass=$(grep -E '^\s*Passed\s*:' "$log" | awk -F: '{s+=$2} END {print s+0}')
lit_fail=$(grep -E '^\s*(Failed|Unresolved|Timed Out|Unexpectedly Passed)\s*:' "$log" \
  | awk -F: '{s+=$2} END {print s+0}')
lit_skip=$(grep -E '^\s*(Unsupported|Skipped|Excluded)\s*:' "$log" \
  | awk -F: '{s+=$2} END {print s+0}')

echo "== unit tests (ctest) =="
ctest --test-dir "$build" --output-on-failure | tee "$log"
ctest_status=${PIPESTATUS[0]}
ctest_total=$(sed -nE 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\2/p' "$log")
ctest_fail=$(sed -nE 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/p' "$log")
ctest_total=${ctest_total:-0}
ctest_fail=${ctest_fail:-0}
# Skipped tests (the GPU tests on a machine without one) are not passes.
ctest_skip=$(grep -cE '^\s+[0-9]+ - .* \(Skipped\)$' "$log" || true)
ctest_skip=${ctest_skip:-0}
if [ "$ctest_skip" -gt 0 ] && [ -x "$build/runtime/GPipeRuntimeCUDATests" ]; then
  reason=$("$build/runtime/GPipeRuntimeCUDATests" --gtest_filter='CUDAKernels.Binary' 2>&1 \
    | grep -m1 -E 'no CUDA device' || true)
  echo "skipped: $ctest_skip GPU tests (${reason:-see ctest -V})"
fi

# The format gate (scripts/format.sh): one check over every C/C++/CUDA file.
echo "== format (scripts/format.sh) =="
format_pass=0
format_fail=0
if "$root/scripts/format.sh"; then format_pass=1; else format_fail=1; fi

# Each fuzz target for FUZZ_SECONDS (30 by default; 0 skips them) in the
# clang build scripts/fuzz.sh makes (build-san/); a target passes when it
# found nothing.
fuzz_seconds="${FUZZ_SECONDS:-30}"
fuzz_pass=0
fuzz_fail=0
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzz (scripts/fuzz.sh $fuzz_seconds) =="
  "$root/scripts/fuzz.sh" "$fuzz_seconds" | tee "$log"
  fuzz_status=${PIPESTATUS[0]}
  fuzz_pass=$(sed -nE 's/^fuzz: ([0-9]+) passed, ([0-9]+) failed$/\1/p' "$log")
  fuzz_fail=$(sed -nE 's/^fuzz: ([0-9]+) passed, ([0-9]+) failed$/\2/p' "$log")
  fuzz_pass=${fuzz_pass:-0}
  fuzz_fail=${fuzz_fail:-0}
  if [ "$fuzz_status" -ne 0 ] && [ "$fuzz_fail" -eq 0 ]; then fuzz_fail=1; fi
fi

# The adversarial suite: hundreds of hostile inputs to every tool, each
# clean (a located error, or a success whose result is checked) or a
# finding (crash, hang, suspect); one pass or failure per case.
adv_pass=0
adv_fail=0
if [ "${ADVERSARIAL:-1}" != 0 ]; then
  echo "== adversarial (scripts/adversarial.py) =="
  python3 "$root/scripts/adversarial.py" "$build" | tee "$log"
  adv_status=${PIPESTATUS[0]}
  summary=$(grep -E '^adversarial: [0-9]+ cases, [0-9]+ clean' "$log" | tail -1)
  adv_cases=$(echo "$summary" | sed -nE 's/^adversarial: ([0-9]+) cases.*/\1/p')
  adv_pass=$(echo "$summary" | sed -nE 's/^adversarial: [0-9]+ cases, ([0-9]+) clean.*/\1/p')
  adv_cases=${adv_cases:-0}
  adv_pass=${adv_pass:-0}
  adv_fail=$((adv_cases - adv_pass))
  if [ "$adv_status" -ne 0 ] && [ "$adv_fail" -eq 0 ]; then adv_fail=1; fi
fi

passed=$((lit_pass + ctest_total - ctest_fail - ctest_skip + fuzz_pass + format_pass + adv_pass))
failed=$((lit_fail + ctest_fail + fuzz_fail + format_fail + adv_fail))
if [ "$lit_status" -ne 0 ] && [ "$lit_fail" -eq 0 ]; then failed=$((failed + 1)); fi
if [ "$ctest_status" -ne 0 ] && [ "$ctest_fail" -eq 0 ]; then failed=$((failed + 1)); fi
echo
echo "lit: $lit_pass passed, $lit_fail failed; gtest: $((ctest_total - ctest_fail - ctest_skip)) passed, $ctest_fail failed, $ctest_skip skipped; fuzz: $fuzz_pass passed, $fuzz_fail failed; format: $format_pass passed, $format_fail failed; adversarial: $adv_pass passed, $adv_fail failed"
echo "total: $passed passed, $failed failed, $((lit_skip + ctest_skip)) skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
