#!/usr/bin/env bash
# Installs the Debian 12 packages qforge builds against. Idempotent: when nothing is
# missing it prints nothing and touches nothing. Sourced by scripts/run and scripts/test.
set -euo pipefail

QFORGE_PACKAGES=(
  cmake ninja-build g++ pkg-config
  libboost-dev libspdlog-dev libfmt-dev libcpuinfo-dev
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev
  # model layer: ONNX import (ONNX 1.12 and its protobuf), float GEMM, ONNX's test cases;
  # recipes: node-name patterns matched in linear time
  libonnx-dev libprotobuf-dev libopenblas-dev libonnx-testdata libre2-dev
  # the qforge tool's data readers: gzip'd IDX files, .npz archives
  zlib1g-dev libzip-dev
  # the C export's tests build the exported code for a 32-bit target too (gcc -m32)
  gcc-multilib
  # the Python package (python/, docs/PYTHON.md): the interpreter's headers, pybind11, and
  # DLPack's header (plans read and write torch tensors, CUDA ones included, in place)
  python3-dev pybind11-dev libdlpack-dev
  # optional backends: oneDNN (its CMake config needs the OpenCL headers, which libdnnl-dev only
  # recommends), Vulkan (headers, loader, shader compiler, lavapipe, validation layers)
  libdnnl-dev ocl-icd-opencl-dev
  # fuzz harnesses (fuzz/, ctest label fuzz): clang with libFuzzer and the sanitizer runtimes
  clang libclang-rt-14-dev
  # the formatting check (scripts/format --check, ctest source_formatting)
  clang-format
  # the Fashion-MNIST example (examples/fashion_mnist): the IDX files of its images and labels
  dataset-fashion-mnist
  # the MiniLM example (examples/minilm): Unicode data for its WordPiece tokenizer
  libicu-dev
  # the Python test venv (scripts/venv.sh: ONNX Runtime, onnx, numpy from PyPI) for the ONNX
  # Runtime checks: venv with ensurepip, and pip's CA bundle
  python3 python3-venv ca-certificates
  libvulkan-dev glslc spirv-tools mesa-vulkan-drivers vulkan-validationlayers
)

qforge_install_deps() {
  local missing=()
  for p in "${QFORGE_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  echo "qforge: installing missing packages: ${missing[*]}"
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
