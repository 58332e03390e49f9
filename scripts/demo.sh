#!/usr/bin/env bash
#===- demo.sh - Set up, build and run gpipe's main job on a built-in model -===#
#
# Builds gpipe, brings the built-in GPT preset (a char-level decoder) and the
# shipped ONNX export of a GPT into the nn dialect cut into layers (with
# their cost tables), then compiles the preset into a verified 4-stage,
# 8-micro-batch GPipe pipeline and draws its predicted timeline. Everything
# lands in build/demo/.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"

out="$build/demo"
mkdir -p "$out"
bin="$build/bin"

echo
echo "== GPT preset: 4 blocks, width 64, 4 heads, 32 tokens, batch 16 =="
echo "\$ gpipe-import --preset gpt --summary -o $out/gpt-preset.mlir"
"$bin/gpipe-import" --preset gpt --summary -o "$out/gpt-preset.mlir"

echo
echo "== ONNX export of a 4-block GPT (test/Frontend/ONNX/Inputs/gpt.onnx) =="
echo "\$ gpipe-import gpt.onnx --summary -o $out/gpt-onnx.mlir"
"$bin/gpipe-import" "$root/test/Frontend/ONNX/Inputs/gpt.onnx" --summary \
  -o "$out/gpt-onnx.mlir"

echo
echo "== the pipeline: 4 stages, 8 micro-batches, GPipe schedule, stage remat =="
echo "\$ gpipe-opt gpt-preset.mlir --gpipe-pipeline=\"stages=4 microbatches=8\" --gpipe-export-trace=... --gpipe-plan-report"
"$bin/gpipe-opt" "$out/gpt-preset.mlir" \
  --gpipe-pipeline="stages=4 microbatches=8 schedule=gpipe remat=stage" \
  --gpipe-export-trace="file=$out/schedule.trace.json svg=$out/schedule.svg" \
  --gpipe-plan-report \
  --mlir-elide-resource-strings-if-larger=16 -o "$out/gpt-pipeline.mlir"
echo
echo "rank 1's program (what the schedule verifier proved deadlock-free):"
sed -n '/gpipe.program rank 1/,/^    }/p' "$out/gpt-pipeline.mlir" | head -n 12
echo "  ..."
echo
echo "Predicted timeline: $out/schedule.svg (open in a browser) and"
echo "$out/schedule.trace.json (load in ui.perfetto.dev or chrome://tracing)."
echo
echo "IR: $out/gpt-preset.mlir (layers) and $out/gpt-pipeline.mlir (pipeline)."
echo "Training this pipeline end to end (gpipe-compile, gpipe-run) is not built yet."
