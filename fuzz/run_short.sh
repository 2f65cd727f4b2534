#!/usr/bin/env bash
# One short fuzz run, as the ctest tests qforge_fuzz_<name> do it:
#   fuzz/run_short.sh BUILD_DIR NAME SECONDS
# replays every committed input of NAME (fuzz/corpus/NAME, then fuzz/findings/NAME), then
# mutates them for SECONDS. New inputs go to a temporary corpus that is removed afterwards
# (the committed corpus is never written); a crash, sanitizer report, leak, timeout (10 s per
# input) or out-of-memory (2 GB) fails with the path of the saved reproducer.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd) name=$2 seconds=$3
bin=$build/qforge_fuzz_$name
artifacts=$build/artifacts/$name
if [[ ! -x $bin ]]; then
  echo "qforge fuzz: $bin is missing; the test qforge_fuzz_build builds it (fuzz/build.sh)" >&2
  exit 1
fi
mkdir -p "$artifacts"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/qforge-fuzz-$name.XXXXXX")
# Input files of tuning_cache and elf_check (harnesses/scratch_file.h), in memory when possible.
files=$(mktemp -d "$([[ -w /dev/shm ]] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/qforge-fuzz-$name.XXXXXX")
export QFORGE_FUZZ_SCRATCH=$files
trap 'rm -rf "$scratch" "$files"' EXIT
mkdir "$scratch/corpus"
inputs=("$root/fuzz/corpus/$name")
[[ -d $root/fuzz/findings/$name ]] && inputs+=("$root/fuzz/findings/$name")
options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
         -artifact_prefix="$artifacts/")
[[ -f $root/fuzz/dictionaries/$name.dict ]] && options+=(-dict="$root/fuzz/dictionaries/$name.dict")
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
"$bin" "${options[@]}" "$scratch/corpus" "${inputs[@]}" > "$scratch/log" 2>&1
rc=$?
if (( rc == 0 )); then
  grep -E '^(stat::number_of_executed_units|stat::new_units_added)|^Done ' "$scratch/log"
  exit 0
fi
# The report (uncaught exception, sanitizer, libFuzzer's own) runs from its first line to the
# end of the log; nlohmann-json's frames are long, so it is capped.
report='^terminate called|ERROR: libFuzzer|==[0-9]+== ?ERROR|runtime error:|^ALARM: |out-of-memory'
if grep -Eq "$report" "$scratch/log"; then
  awk -v re="$report" '$0 ~ re {p = 1} p' "$scratch/log" | head -n 80
else
  tail -n 60 "$scratch/log"
fi
reproducer=$(sed -n 's/.*Test unit written to //p' "$scratch/log" | tail -n 1)
echo
if [[ -n $reproducer ]]; then
  echo "qforge fuzz: $name FAILED (exit $rc); reproducer: $reproducer"
  echo "replay with: $bin $reproducer"
  # A committed finding (fuzz/findings) fails until the parser is fixed: name it.
  sum=$(sha1sum < "$reproducer" | cut -d' ' -f1)
  for known in "$root/fuzz/findings/$name"/*; do
    [[ -f $known && $(sha1sum < "$known" | cut -d' ' -f1) == "$sum" ]] &&
      echo "it is the known finding ${known#"$root"/}"
  done
else
  echo "qforge fuzz: $name FAILED (exit $rc) without saving an input; see the log above"
fi
exit 1
