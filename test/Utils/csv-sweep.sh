#!/usr/bin/env bash
#===- csv-sweep.sh - Train one model under imported schedules -------------===#
#
# Usage: csv-sweep.sh DIR FILE.csv... -- MODEL FLAGS...
#
# Each FILE is named <name>_k<K>_v<V>_m<M>[_comms].csv (K ranks, V stages
# per rank, M micro-batches). Compiles the model with it
# (gpipe-compile --schedule-file) and trains 3 SGD steps, then compares the
# first step's gradients and the final parameters with GPipe at K = 1 and
# the same M, byte for byte. Prints "<file>: bitwise" (or "DIFFERENT",
# "rejected: <error>", "run failed: <line>") per file and a final
# "N bitwise, N different, N rejected, N failed".
#
#===-----------------------------------------------------------------------===#
set -u
dir=$1
shift
files=()
while [ "$1" != "--" ]; do files+=("$1"); shift; done
shift # --
train=(--steps 3 --lr 0.1 --seed 7)
mkdir -p "$dir"
same=0 different=0 rejected=0 failed=0
for f in "${files[@]}"; do
  name=$(basename "$f" .csv)
  if [[ ! $name =~ _k([0-9]+)_v([0-9]+)_m([0-9]+) ]]; then
    echo "$name: not named _k<K>_v<V>_m<M>"; failed=$((failed + 1)); continue
  fi
  k=${BASH_REMATCH[1]} v=${BASH_REMATCH[2]} m=${BASH_REMATCH[3]}
  if [ ! -f "$dir/ref$m.p.st" ]; then
    gpipe-compile "$@" --stages 1 --microbatches "$m" -o "$dir/ref.so" &&
      gpipe-run "$dir/ref.so" "${train[@]}" --save-grads "$dir/ref$m.g.st" \
        --save-params "$dir/ref$m.p.st" > /dev/null || exit 1
  fi
  if ! out=$(gpipe-compile "$@" --stages "$k" --virtual-stages "$v" \
               --microbatches "$m" --schedule-file "$f" -o "$dir/x.so" 2>&1); then
    echo "$name: rejected: $(echo "$out" | grep -m1 error)"
    rejected=$((rejected + 1)); continue
  fi
  if ! gpipe-run "$dir/x.so" "${train[@]}" --save-grads "$dir/x.g.st" \
         --save-params "$dir/x.p.st" > "$dir/run.log" 2>&1; then
    echo "$name: run failed: $(tail -1 "$dir/run.log")"
    failed=$((failed + 1)); continue
  fi
  if cmp -s "$dir/ref$m.g.st" "$dir/x.g.st" &&
     cmp -s "$dir/ref$m.p.st" "$dir/x.p.st"; then
    echo "$name: bitwise"; same=$((same + 1))
  else
    echo "$name: DIFFERENT"; different=$((different + 1))
  fi
done
echo "$same bitwise, $different different, $rejected rejected, $failed failed"
