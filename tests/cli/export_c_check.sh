#!/bin/sh
# qforge export-c on the Fashion-MNIST example CNN as a user runs it: export with --check,
# compile the directory with one strict cc command, and compare the program's outputs with
# qforge's integer execution byte for byte. Exit 77 (skipped) without the dataset or a cc.
# Usage: export_c_check.sh QFORGE SOURCE_DIR WORK_DIR [RECIPE]
# RECIPE names a file of examples/fashion_mnist/recipes (default int8_static.json).
set -eu
qforge=$1 src=$2 work=$3 recipe=${4:-int8_static.json}
data=/usr/share/datasets/fashion-mnist  # Debian's dataset-fashion-mnist
if [ ! -f "$data/t10k-images-idx3-ubyte.gz" ]; then echo "skipped: no $data"; exit 77; fi
cc=${CC:-cc}
if ! "$cc" --version >/dev/null 2>&1; then echo "skipped: no C compiler ($cc)"; exit 77; fi
rm -rf "$work"
"$qforge" export-c "$src/examples/fashion_mnist/cnn.onnx" \
  --recipe "$src/examples/fashion_mnist/recipes/$recipe" \
  --calibration "$data/train-images-idx3-ubyte.gz" --calibration-limit 256 \
  --check "$data/t10k-images-idx3-ubyte.gz" --check-labels "$data/t10k-labels-idx1-ubyte.gz" \
  --check-limit 200 -o "$work"
"$cc" -std=c99 -O1 -ffp-contract=off -Wall -Wextra -Wpedantic -Werror "$work"/*.c -o "$work/model"
"$work/model" < "$work/check_input.bin" | cmp - "$work/check_output.bin"
echo "export-c ($recipe): 200 outputs byte-identical"
