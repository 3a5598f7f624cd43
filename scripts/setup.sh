#!/usr/bin/env bash
# Installs every dependency of cuts on a fresh Debian 12 machine (as root,
# non-interactive, idempotent) and builds it into build/.
#   scripts/setup.sh            deps + build
#   CUTS_SKIP_BUILD=1 scripts/setup.sh   deps only
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools   # MLIR/LLVM 19
  clang-19 libclang-rt-19-dev                              # libFuzzer
  libonnx-dev libprotobuf-dev protobuf-compiler            # ONNX schema
  nlohmann-json3-dev libfmt-dev catch2 ninja-build cmake
  hipcc libamdhip64-dev                                    # HIP compile checks
  libonnx-testdata                                         # ONNX 1.12 node tests
  libopenmpi-dev openmpi-bin                               # cuts-mpi (BigCuts)
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -r requirements.txt

if [ "${CUTS_SKIP_BUILD:-0}" != 1 ]; then
  if [ ! -f build/build.ninja ]; then
    cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release -DCUTS_BUILD_TESTS=ON >/dev/null
  fi
  ninja -C build
fi
