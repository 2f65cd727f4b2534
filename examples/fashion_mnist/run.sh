#!/usr/bin/env bash
# Quantizes the Fashion-MNIST CNN with a recipe, prints the per-layer report and the accuracy of
# float and quantized on the 10 000 test images, and says where the QDQ model, the report and
# the SQNR chart are. Usage: run.sh BUILD_DIR [RECIPE] (default recipes/int8_static.json).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build_dir=$(cd "$1" && pwd)
recipe=${2:-$here/recipes/int8_static.json}
data=/usr/share/datasets/fashion-mnist  # Debian's dataset-fashion-mnist
out=$build_dir/fashion-mnist
mkdir -p "$out"
qforge=$build_dir/bin/qforge
calibration=(--calibration "$data/train-images-idx3-ubyte.gz" --calibration-limit 1024)

"$qforge" quantize "$here/cnn.onnx" --recipe "$recipe" "${calibration[@]}" \
  -o "$out/cnn_qdq.onnx" --report "$out/cnn_report.json" --chart "$out/cnn_sqnr.svg"
echo
"$qforge" eval "$here/cnn.onnx" --recipe "$recipe" "${calibration[@]}" \
  --data "$data/t10k-images-idx3-ubyte.gz" --labels "$data/t10k-labels-idx1-ubyte.gz"
