#!/usr/bin/env bash
#===- setup.sh - Install gpipe's build and test dependencies --------------===#
#
# Installs every package gpipe needs from Debian 12's registry with apt-get.
# Idempotent: packages already present are left alone, so re-running is cheap.
# With --demo, only what building and running gpipe-compile and gpipe-run
# needs (no clang, sanitizer runtimes or clang-format: the fuzzers' and the
# format check's; no ONNX Python modules: the adversarial suite's).
#
#===-----------------------------------------------------------------------===#
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build git python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libopenblas-dev libxsmm-dev libopenmpi-dev openmpi-bin
  libonnx-dev libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev libgtest-dev
  zlib1g-dev libzstd-dev libedit-dev libcurl4-openssl-dev libxml2-dev
)
if [ "${1:-}" != "--demo" ]; then
  # The fuzzers and the format check (clang), and the adversarial suite's
  # ONNX models (python3-onnx, python3-numpy).
  PKGS+=(clang-22 libclang-rt-22-dev clang-format-22 python3-onnx python3-numpy)
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
