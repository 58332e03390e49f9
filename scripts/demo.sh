#!/usr/bin/env bash
#===- demo.sh - Set up, build and run gpipe's main job on a built-in model -===#
#
# Installs what gpipe-calibrate, gpipe-compile and gpipe-run need and
# builds only those three (scripts/build.sh), then:
#   1. measures this machine's kernels once (gpipe-calibrate, about 10 s,
#      into ~/.cache/gpipe/machine.json, or $GPIPE_MACHINE_FILE; kept for
#      every later compile, and reused when it is there);
#   2. compiles the built-in GPT preset (a char-level decoder: 4 blocks,
#      width 64, 4 heads, 32 tokens, batch 16) ahead of time into a
#      4-stage, 8-micro-batch GPipe pipeline with AdamW and global
#      gradient-norm clipping, its step time predicted from those kernel
#      rates, before the model ever ran;
#   3. trains it on CPU on the built-in text, one thread per pipeline rank,
#      with linear warmup and cosine decay, writing a metrics file, a
#      Chrome/Perfetto trace and an SVG of the loss, gradient-norm and
#      learning-rate curves.
# Prints the plan report, the steps, the measured bubble and step time next
# to the predicted ones, and each rank's measured arena next to its plan.
# Everything lands in build/demo/. STEPS overrides the 200 steps.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" gpipe-calibrate gpipe-compile gpipe-run

out="$build/demo"
mkdir -p "$out"
bin="$build/bin"
steps="${STEPS:-200}"
model=(--preset gpt --stages 4 --microbatches 8 --optimizer adam --clip-grad-norm 1.0 --eval)

echo
# Where gpipe-calibrate writes and gpipe-compile looks (MachineFile.h);
# GPIPE_MACHINE_FILE=none keeps the demo's own under build/demo.
if [ "${GPIPE_MACHINE_FILE:-}" = none ]; then
  machine="$out/machine.json"
elif [ -n "${GPIPE_MACHINE_FILE:-}" ]; then
  machine="$GPIPE_MACHINE_FILE"
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
  machine="$XDG_CACHE_HOME/gpipe/machine.json"
else
  machine="${HOME:?set HOME, or GPIPE_MACHINE_FILE to a file}/.cache/gpipe/machine.json"
fi
# One measured before is kept, unless gpipe-compile cannot read it (a
# profile of an older format).
if [ -f "$machine" ] &&
  "$bin/gpipe-compile" --preset mlp --machine-file "$machine" --emit nn \
    -o /dev/null > /dev/null 2>&1; then
  echo "== measure: this machine's kernel rates, measured before: $machine =="
else
  echo "== measure: this machine's kernel rates (GEMMs by shape, streaming, row kernels, the optimizer) =="
  echo "\$ gpipe-calibrate -o $machine"
  mkdir -p "$(dirname "$machine")"
  "$bin/gpipe-calibrate" -o "$machine"
fi

echo
echo "== compile: GPT preset -> 4 stages x 8 micro-batches, GPipe schedule, clipped AdamW, evaluation programs =="
echo "\$ gpipe-compile ${model[*]} --machine-file $machine -o $out/gpt.so"
"$bin/gpipe-compile" "${model[@]}" --machine-file "$machine" -o "$out/gpt.so"

echo
echo "== train: $steps steps, warmup + cosine decay, clipped at norm 1, evaluated every 50, 4 rank threads =="
echo "\$ gpipe-run $out/gpt.so --steps $steps --lr 3e-3 --lr-schedule cosine --warmup-steps 20 --min-lr 3e-4 --eval-data builtin --eval-every 50 --metrics $out/metrics.jsonl --plot $out/curves.svg --trace $out/train.trace.json"
"$bin/gpipe-run" "$out/gpt.so" --steps "$steps" --lr 3e-3 --lr-schedule cosine \
  --warmup-steps 20 --min-lr 3e-4 --eval-data builtin --eval-every 50 \
  --metrics "$out/metrics.jsonl" --plot "$out/curves.svg" \
  --trace "$out/train.trace.json"

echo
echo "The loss, evaluation-loss, gradient-norm and learning-rate curves: $out/curves.svg"
echo "Every step's numbers: $out/metrics.jsonl (one JSON object per line)."
echo "What ran, one track per rank: $out/train.trace.json"
echo "(load it in ui.perfetto.dev or chrome://tracing)."
echo "This machine has $(nproc) cores for 4 rank threads: the measured bubble"
echo "includes the time ranks wait for a core, not only pipeline fill and drain."
