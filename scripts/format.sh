#!/usr/bin/env bash
#===- format.sh - Check or apply gpipe's C++ formatting -------------------===#
#
# Runs the clang-format of the LLVM gpipe builds against (22; scripts/setup.sh
# installs it) over every tracked C, C++ and CUDA source, with the style in
# .clang-format (LLVM's). The .def tables and TableGen files keep their own
# layout.
#
#   scripts/format.sh          check: list the files that differ, exit 1 if any
#   scripts/format.sh --fix    rewrite them in place
#
# Ends with "format: N files checked, M to reformat".
#
#===-----------------------------------------------------------------------===#
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
clang_format="${CLANG_FORMAT:-/usr/lib/llvm-22/bin/clang-format}"
if [ ! -x "$clang_format" ]; then
  echo "format: $clang_format not found (apt-get install clang-format-22)"
  exit 1
fi

cd "$root"
mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cpp' '*.cu')
if [ "${1:-}" = "--fix" ]; then
  printf '%s\0' "${files[@]}" | xargs -0 "$clang_format" -i
fi
bad=()
for f in "${files[@]}"; do
  if ! "$clang_format" --dry-run --Werror "$f" > /dev/null 2>&1; then
    bad+=("$f")
  fi
done
for f in "${bad[@]}"; do
  echo "needs formatting: $f (scripts/format.sh --fix)"
done
echo "format: ${#files[@]} files checked, ${#bad[@]} to reformat"
[ "${#bad[@]}" -eq 0 ]
