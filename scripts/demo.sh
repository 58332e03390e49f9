#!/usr/bin/env bash
#===- demo.sh - Set up, build and run gpipe's main job on a built-in model -===#
#
# Builds gpipe (installing what it needs), compiles the built-in GPT preset
# (a char-level decoder: 4 blocks, width 64, 4 heads, 32 tokens, batch 16)
# ahead of time into a 4-stage, 8-micro-batch GPipe pipeline, and trains it
# on CPU on the built-in text: one thread per pipeline rank. Prints the plan
# report, the loss of every step, the measured bubble next to the predicted
# one, and each rank's measured arena next to its plan; writes the Chrome /
# Perfetto trace of what ran. Everything lands in build/demo/.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"

out="$build/demo"
mkdir -p "$out"
bin="$build/bin"
steps="${STEPS:-200}"

echo
echo "== compile: GPT preset -> 4 stages x 8 micro-batches, GPipe schedule =="
echo "\$ gpipe-compile --preset gpt --stages 4 --microbatches 8 --optimizer adam -o $out/gpt.so"
"$bin/gpipe-compile" --preset gpt --stages 4 --microbatches 8 --optimizer adam \
  -o "$out/gpt.so"

echo
echo "== train: $steps steps of AdamW on the built-in text, 4 rank threads =="
echo "\$ gpipe-run $out/gpt.so --steps $steps --optimizer adam --lr 3e-3 --trace $out/train.trace.json"
"$bin/gpipe-run" "$out/gpt.so" --steps "$steps" --optimizer adam --lr 3e-3 \
  --trace "$out/train.trace.json"

echo
echo "What ran, one track per rank: $out/train.trace.json"
echo "(load it in ui.perfetto.dev or chrome://tracing)."
echo "This machine has $(nproc) cores for 4 rank threads: the measured bubble"
echo "includes the time ranks wait for a core, not only pipeline fill and drain."
