#!/usr/bin/env bash
#===- stress-checkpoints.sh - Many random kills during checkpointing ------===#
#
# The crash-consistency test of test/E2E/checkpoint.test at a larger scale:
# TRIALS (default 1000) runs of a small model that checkpoints every step,
# each killed with SIGKILL at a random moment and resumed with another stage
# count; every resume must end at the straight run's parameters, bit for
# bit. Needs a build (scripts/build.sh).
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${BUILD_DIR:-$root/build}/bin"
trials="${TRIALS:-1000}"
work="$(mktemp -d /tmp/gpipe-stress-XXXXXX)"
trap 'rm -rf "$work"' EXIT

model=(--preset mlp --depth 2 --width 16 --in-features 16 --classes 4
       --batch 8 --microbatches 2 --optimizer adam --quiet)
"$bin/gpipe-compile" "${model[@]}" --stages 2 -o "$work/k2.so"
"$bin/gpipe-compile" "${model[@]}" --stages 3 -o "$work/k3.so"
"$bin/gpipe-run" "$work/k2.so" --steps 12 --optimizer adam \
  --save-params "$work/straight.st" --quiet > /dev/null
mkdir -p "$work/kill"
python3 "$root/test/Utils/kill-resume.py" --gpipe-run "$bin/gpipe-run" \
  --run "$work/k2.so" --resume "$work/k3.so" --steps 12 \
  --expect "$work/straight.st" --workdir "$work/kill" --trials "$trials" \
  --seed "${SEED:-$RANDOM}" -- --optimizer adam
