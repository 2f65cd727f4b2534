#!/usr/bin/env bash
# Creates the Python test venv (ONNX Runtime, onnx, numpy; scripts/python-test-requirements.txt)
# in ${QFORGE_VENV:-.venv} and exports QFORGE_TEST_PYTHON, which the ONNX Runtime comparison
# tests (ctest label ort) read; without it they skip. Idempotent: when the venv holds exactly
# the pinned requirements it does nothing. Sourced by scripts/test; `scripts/venv.sh` alone
# creates it and prints the python's path.
set -euo pipefail

qforge_venv() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  local venv=${QFORGE_VENV:-$root/.venv}
  local requirements=$root/scripts/python-test-requirements.txt
  local stamp=$venv/.qforge-requirements
  if [[ ! -x $venv/bin/python ]] || ! cmp -s "$requirements" "$stamp"; then
    echo "qforge: creating the Python test venv in $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$stamp"
  fi
  export QFORGE_TEST_PYTHON=$venv/bin/python
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  qforge_venv
  echo "$QFORGE_TEST_PYTHON"
fi
