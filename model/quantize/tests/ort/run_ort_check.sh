#!/bin/sh
# ctest's entry to the ONNX Runtime check: runs ort_check.py with the test venv's python
# ($QFORGE_TEST_PYTHON from scripts/test, else the CMake cache value given as $2), or skips
# (exit 77) saying why when there is none.
#   run_ort_check.sh QFORGE_ORT_CASES [PYTHON]
cases=$1
python=${QFORGE_TEST_PYTHON:-${2:-}}
if [ -z "$python" ]; then
  echo "SKIPPED: no Python with onnxruntime: run ./scripts/test (it creates .venv with" \
    "scripts/venv.sh and sets QFORGE_TEST_PYTHON), or set QFORGE_TEST_PYTHON to such a python"
  exit 77
fi
if ! "$python" -c "import onnxruntime, onnx, numpy" 2>/dev/null; then
  echo "SKIPPED: $python cannot import onnxruntime, onnx and numpy (scripts/venv.sh installs" \
    "them from scripts/python-test-requirements.txt)"
  exit 77
fi
exec "$python" "$(dirname "$0")/ort_check.py" "$cases"
