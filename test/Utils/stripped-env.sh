#!/usr/bin/env bash
#===- stripped-env.sh - Run a command as on a bare GPU machine ------------===#
#
# Usage: stripped-env.sh DIR COMMAND...
#
# Runs COMMAND with an environment like the bare GPU machines the check targets:
# PATH is DIR/bin, a folder of links to the shell tools, ldd and Python
# only (no LLVM, lit, FileCheck, compilers, CMake, apt, mpirun, gpipe-compile),
# LD_LIBRARY_PATH holds the CUDA toolkit alone, nothing else is inherited
# but HOME and TMPDIR. Fails first when a forbidden tool is still reachable.
#
#===-----------------------------------------------------------------------===#
set -euo pipefail
dir="$1"; shift
mkdir -p "$dir/bin"
python="$(python3 -c 'import sys; print(sys.executable)')"
ln -sf "$python" "$dir/bin/python3"
for t in bash sh env cat ls mkdir rm mv cp ln grep sed awk sort head tail tr \
         wc date cmp tee cut dirname basename readlink ldd ldconfig timeout \
         sleep uname nproc od find mktemp; do
  p="$(PATH=/usr/bin:/bin:/usr/sbin:/sbin command -v "$t")" || { echo "stripped-env: no $t here" >&2; exit 1; }
  ln -sf "$p" "$dir/bin/$t"
done
for t in gpipe-compile gpipe-opt clang gcc g++ cc c++ nvcc cmake ninja make \
         apt apt-get dpkg pip pip3 lit llvm-lit FileCheck mlir-opt mpirun xz; do
  if PATH="$dir/bin" command -v "$t" > /dev/null; then
    echo "stripped-env: $t is reachable" >&2; exit 1
  fi
done
exec env -i PATH="$dir/bin" HOME="${HOME:-/root}" TMPDIR="${TMPDIR:-/tmp}" \
  LD_LIBRARY_PATH=/usr/local/cuda/lib64 ${GPU_CHECK_STRICT_LIBS:+GPU_CHECK_STRICT_LIBS=1} "$@"
