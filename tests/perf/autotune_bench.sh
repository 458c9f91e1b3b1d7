#!/usr/bin/env bash
# autotune_bench.sh: HV_AUTOTUNE=1 against a manual sweep of the same knobs, on the
# 256 x 4 KiB fused step (bench_autotune.c), in one run: every manual setting
# (HV_FUSION_THRESHOLD x HV_CYCLE_TIME, the autotuner's candidates) once, then the
# autotuned run ROUNDS times; prints each figure, the best manual setting, the
# autotuned median and their ratio (goal: >= 0.97).
#   tests/perf/autotune_bench.sh BUILD_DIR [NP=2] [SECONDS=5] [ROUNDS=3]
set -euo pipefail
build=${1:?usage: autotune_bench.sh BUILD_DIR [NP] [SECONDS] [ROUNDS]}
np=${2:-2} seconds=${3:-5} rounds=${4:-3}
bench=$build/tests/collectives/bench_autotune
[ -x "$bench" ] || { echo "autotune_bench.sh: $bench not built (cmake --build $build --target bench_autotune)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { mpirun --oversubscribe -np "$np" "$bench" 256 4096 "$seconds" | sed -n 's/.*steps_per_s=\([0-9.]*\).*/\1/p'; }
best=0 best_at=
for f in 256K 1M 4M 16M 64M 128M; do
  for c in 0.1 0.5 1 2.5 5; do
    v=$(HV_FUSION_THRESHOLD=$f HV_CYCLE_TIME=$c run)
    echo "manual HV_FUSION_THRESHOLD=$f HV_CYCLE_TIME=$c: $v steps/s"
    if awk -v a="$v" -v b="$best" 'BEGIN{exit !(a > b)}'; then best=$v best_at="$f/$c"; fi
  done
done
log=$(mktemp /tmp/autotune.XXXXXX.csv)
tuned=()
for r in $(seq 1 "$rounds"); do
  v=$(HV_AUTOTUNE=1 HV_AUTOTUNE_LOG=$log run)
  echo "autotuned run $r: $v steps/s, chose $(grep '^chosen' "$log" | cut -d, -f3,4)"
  tuned+=("$v")
done
rm -f "$log"
median=$(printf '%s\n' "${tuned[@]}" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
echo "best manual ($best_at): $best steps/s; autotuned median: $median steps/s; ratio $(awk -v a="$median" -v b="$best" 'BEGIN{printf "%.3f", a/b}')"
