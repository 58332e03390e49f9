#!/usr/bin/env bash
#===- build.sh - Set up and build gpipe -----------------------------------===#
#
# Installs the dependencies (scripts/setup.sh), configures with CMake and
# builds everything into build/ with Ninja, or only the targets given
# (scripts/build.sh gpipe-calibrate gpipe-compile gpipe-run: what the demo
# runs, with the packages it needs). Safe to re-run: each step is
# incremental. BUILD_DIR and JOBS override the defaults.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
jobs="${JOBS:-$(nproc)}"

targets=("$@")
if [ ${#targets[@]} -gt 0 ]; then
  "$root/scripts/setup.sh" --demo
else
  "$root/scripts/setup.sh"
fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_COMPILER=gcc \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$build" -j "$jobs" --target "${targets[@]}"
else
  cmake --build "$build" -j "$jobs"
fi
