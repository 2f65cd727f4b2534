#!/usr/bin/env bash
# Configures and builds qforge (Release, Ninja) into ${QFORGE_BUILD_DIR:-build}.
set -euo pipefail
qforge_build() {
  local build_dir=${QFORGE_BUILD_DIR:-build}
  local jobs=${QFORGE_JOBS:-$(nproc)}
  if [[ ! -f $build_dir/build.ninja ]]; then
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  fi
  cmake --build "$build_dir" -j "$jobs"
}
