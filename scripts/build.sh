#!/usr/bin/env bash
#===- build.sh - Set up and build gpipe -----------------------------------===#
#
# Installs the dependencies (scripts/setup.sh), configures with CMake and
# builds everything into build/ with Ninja. Safe to re-run: each step is
# incremental. BUILD_DIR and JOBS override the defaults.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
jobs="${JOBS:-$(nproc)}"

"$root/scripts/setup.sh"

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_COMPILER=gcc \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
cmake --build "$build" -j "$jobs"
