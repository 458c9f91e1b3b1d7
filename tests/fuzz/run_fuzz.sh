#!/bin/sh
# run_fuzz.sh NAME FUZZER SEEDS WORK SECONDS [libFuzzer flags...]: one bounded fuzzing run
# of the ctest `fuzz` label. The seeds are copied into WORK/corpus (new inputs land
# there, never in the source tree), crash/leak/timeout inputs in WORK/artifacts. Prints
# libFuzzer's final statistics and one line "fuzz NAME: N executions in S s"; a
# finding fails the test with libFuzzer's whole report and the input's path.
set -u
name=$1 fuzzer=$2 seeds=$3 work=$4 seconds=$5
shift 5
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/"
start=$(date +%s)
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" >"$work/log" 2>&1
rc=$?
wall=$(($(date +%s) - start))
if [ $rc -ne 0 ]; then
  cat "$work/log"
  echo "fuzz $name: FAILED (exit $rc); the input is in $work/artifacts/:"
  ls -l "$work/artifacts/"
  exit 1
fi
grep -E '^(INFO: Seed|INFO: +[0-9]+ files found|Done [0-9]+ runs)' "$work/log"
grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$work/log"
grep '^stat::' "$work/log"
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
inputs=$(ls "$work/corpus" | wc -l)
echo "fuzz $name: ${execs:-?} executions in $wall s," \
  "corpus $(ls "$seeds" | wc -l) -> $inputs inputs"
[ -n "$execs" ] || { echo "fuzz $name: no statistics printed"; exit 1; }
