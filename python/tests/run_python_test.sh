#!/usr/bin/env bash
# Runs one Python test module with $QFORGE_TEST_PYTHON (scripts/test sets it to the test venv's
# python, scripts/venv.sh), else with the interpreter CMake found ($1), or skips when neither
# has numpy. Usage: run_python_test.sh CONFIGURED_PYTHON MODULE
set -uo pipefail
python=${QFORGE_TEST_PYTHON:-${1:-}}
module=$2
if [[ -z $python ]] || ! "$python" -c "import numpy" >/dev/null 2>&1; then
  echo "skipped: no Python interpreter with numpy (scripts/test makes one with scripts/venv.sh" \
    "and sets QFORGE_TEST_PYTHON; or configure QFORGE_PYTHON_TEST_EXECUTABLE)"
  exit 0
fi
exec "$python" -m unittest -v "$module"
