#!/usr/bin/env bash
#===- demo.sh - Set up, build and run gpipe's main job on a built-in model -===#
#
# Builds gpipe, then brings the built-in GPT preset (a char-level decoder)
# and the shipped ONNX export of a GPT into the nn dialect, cut into the
# layers the pipeline partitioner works with, and prints their cost tables.
# The IR lands in build/demo/.
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
echo "== the first layers of the preset, as IR =="
"$bin/gpipe-opt" "$out/gpt-preset.mlir" --mlir-elide-elementsattrs-if-larger=8 \
  | sed -n '/func.func/,/nn.layer "blocks.0"/p' | head -n 40
echo "..."
echo
echo "Full IR: $out/gpt-preset.mlir and $out/gpt-onnx.mlir"
