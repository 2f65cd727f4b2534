#!/usr/bin/env bash
# Configures (first time) and builds the fuzz harnesses with clang into DIR
# (default build/fuzz): fuzz/CMakeLists.txt, a project of its own. Later calls rebuild only
# what changed. Used by the ctest test qforge_fuzz_build and by scripts/fuzz.
#   fuzz/build.sh [DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build/fuzz}
jobs=${QFORGE_JOBS:-$(nproc)}
clangxx=${QFORGE_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
if [[ -z $clangxx ]]; then
  echo "qforge fuzz: clang++ not found; expected clang and libclang-rt-14-dev (scripts/deps.sh)" >&2
  exit 1
fi
if [[ ! -f $dir/build.ninja ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$root/fuzz" -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER="$clangxx" "${launcher[@]}" >/dev/null
fi
cmake --build "$dir" -j "$jobs"
