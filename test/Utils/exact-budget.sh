#!/usr/bin/env bash
#===- exact-budget.sh - The smallest budget fits, one byte less does not ---===#
#
# Usage: exact-budget.sh GPIPE-COMPILE-ARGS...
#
# Compiles with a 1-byte budget and reads the smallest budget the error
# reports, then compiles at exactly that budget (must succeed and write the
# library) and one byte less (must fail naming the rank over the budget).
# Prints "exact budget N ok".
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if gpipe-compile "$@" --memory-budget 1 -o "$dir/m.so" > "$dir/err" 2>&1; then
  echo "a 1-byte budget was accepted"; exit 1
fi
smallest=$(sed -n 's/.*the smallest budget this configuration fits is .*(\([0-9]*\) bytes).*/\1/p' "$dir/err" | head -1)
[ -n "$smallest" ] || { echo "no smallest budget in:"; cat "$dir/err"; exit 1; }
gpipe-compile "$@" --memory-budget "$smallest" --quiet -o "$dir/m.so" ||
  { echo "the smallest budget $smallest was refused"; exit 1; }
[ -s "$dir/m.so" ] || { echo "no library at budget $smallest"; exit 1; }
rm -f "$dir/m.so"
if gpipe-compile "$@" --memory-budget $((smallest - 1)) -o "$dir/m.so" > "$dir/err" 2>&1; then
  echo "budget $((smallest - 1)) was accepted"; exit 1
fi
grep -q "error: pipeline @train rank [0-9]* (.*) needs .* over the memory budget of .*($((smallest - 1)) bytes)" "$dir/err" ||
  { echo "one byte under, no rank named:"; cat "$dir/err"; exit 1; }
[ ! -e "$dir/m.so" ] || { echo "a library was written over budget"; exit 1; }
echo "exact budget $smallest ok"
