#!/usr/bin/env bash
#===- schedule-sweep.sh - Train one model under many schedules ------------===#
#
# Usage: schedule-sweep.sh DIR MICROBATCHES "SCHEDULES" "RANKS" "REMATS"
#                          [VIRTUAL] -- MODEL FLAGS...
#
# Compiles the model at K = 1 (GPipe) as the reference, then for every
# schedule x ranks x remat combination compiles and trains it (3 SGD steps)
# and compares the first step's gradients and the final parameters with the
# reference byte for byte. Prints one line per combination:
#   "<schedule> K=<k> V=<v or default> remat=<r>: bitwise" (or "DIFFERENT", or
#   "rejected: <first line of the error>" when the compiler refuses the
#   shape), and a final "N bitwise, N different, N rejected, N failed".
# Uses gpipe-compile and gpipe-run from PATH.
#
#===-----------------------------------------------------------------------===#
set -u
dir=$1 microbatches=$2 schedules=$3 ranks=$4 remats=$5
shift 5
virtual=0
if [ "$1" != "--" ]; then virtual=$1; shift; fi
shift # --
train=(--steps 3 --lr 0.1 --seed 7)
mkdir -p "$dir"
gpipe-compile "$@" --stages 1 --microbatches "$microbatches" -o "$dir/ref.so" || exit 1
gpipe-run "$dir/ref.so" "${train[@]}" --save-grads "$dir/ref.g.st" \
  --save-params "$dir/ref.p.st" > /dev/null || exit 1
same=0 different=0 rejected=0 failed=0
for s in $schedules; do
  for k in $ranks; do
    for r in $remats; do
      name="$s K=$k V=${virtual/#0/default} remat=$r"
      # V 0: the schedule's own (the flag left out).
      vflag=()
      if [ "$virtual" != 0 ]; then vflag=(--virtual-stages "$virtual"); fi
      if ! out=$(gpipe-compile "$@" --stages "$k" "${vflag[@]}" \
                   --microbatches "$microbatches" --schedule "$s" --remat "$r" \
                   -o "$dir/x.so" 2>&1); then
        echo "$name: rejected: $(echo "$out" | grep -m1 error)"
        rejected=$((rejected + 1))
        continue
      fi
      if ! gpipe-run "$dir/x.so" "${train[@]}" --save-grads "$dir/x.g.st" \
             --save-params "$dir/x.p.st" > "$dir/run.log" 2>&1; then
        echo "$name: run failed: $(tail -1 "$dir/run.log")"
        failed=$((failed + 1))
        continue
      fi
      if ! grep -qE "arena (replica [0-9]+ )?rank $((k - 1)): .*: equal" \
             "$dir/run.log" ||
         grep -q "arena .*: DIFFERENT" "$dir/run.log"; then
        echo "$name: measured arena differs from the plan"
        failed=$((failed + 1))
        continue
      fi
      if cmp -s "$dir/ref.g.st" "$dir/x.g.st" &&
         cmp -s "$dir/ref.p.st" "$dir/x.p.st"; then
        echo "$name: bitwise"
        same=$((same + 1))
      else
        echo "$name: DIFFERENT"
        different=$((different + 1))
      fi
    done
  done
done
echo "$same bitwise, $different different, $rejected rejected, $failed failed"
