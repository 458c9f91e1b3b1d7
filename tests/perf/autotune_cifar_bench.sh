#!/usr/bin/env bash
# autotune_cifar_bench.sh: HV_AUTOTUNE=1 against a manual sweep of the same knobs on
# the main job, cifar_ddp's default run (hvrun -np NP, WRN-10-1 on Fashion-MNIST,
# 5 epochs), issue #24's goal: autotuned throughput >= the best manual setting - 3%.
#   1. the sweep: every setting the autotuner may choose (HV_FUSION_THRESHOLD x
#      HV_CYCLE_TIME, its candidates) for SWEEP_EPOCHS epochs each, ranked by
#      images/s (results.json's summary);
#   2. the comparison: ROUNDS rounds of the whole default run, in each round the best
#      setting of the sweep, then HV_AUTOTUNE=1 (its tuning included in its time),
#      then no setting at all (the defaults), back to back, so a slow spell of the
#      machine hits all three; prints each run, each one's median and the ratios.
# A benchmark, not a test: about 17 minutes for the sweep and 9 minutes a round on
# 2 idle cores.
# BEST=FUSION/CYCLE (say 64M/0.5) skips the sweep and compares against that setting.
#   tests/perf/autotune_cifar_bench.sh BUILD_DIR [NP=2] [SWEEP_EPOCHS=1] [ROUNDS=3] [BEST]
set -euo pipefail
build=$(cd "${1:?usage: autotune_cifar_bench.sh BUILD_DIR [NP] [SWEEP_EPOCHS] [ROUNDS] [BEST]}" && pwd)
np=${2:-2} sweep_epochs=${3:-1} rounds=${4:-3} given_best=${5:-}
[ -x "$build/workloads/cifar_ddp" ] && [ -x "$build/bin/hvrun" ] ||
  { echo "autotune_cifar_bench.sh: $build has no workloads/cifar_ddp or bin/hvrun: build hv first" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/autotune_cifar.XXXXXX)
trap 'rm -rf "$work"' EXIT

# run NAME [cifar_ddp options...]: one run with the environment it is given; prints
# its images/s over the whole run.
run() {
  local name=$1
  shift
  rm -rf "$work/$name"
  (cd "$build" && bin/hvrun -np "$np" workloads/cifar_ddp --results "$work/$name" --no-plots "$@" \
    >"$work/$name.out" 2>&1) || { echo "run $name failed:" >&2; tail -5 "$work/$name.out" >&2; exit 1; }
  python3 -c 'import json,sys; print("%.1f" % json.load(open(sys.argv[1]))["summary"]["images_per_second"])' \
    "$work/$name/results.json"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

echo "# $(date -u '+%F %H:%M') $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), $np ranks"
best=0 best_f=${given_best%/*} best_c=${given_best#*/}
[ -z "$given_best" ] || [ "$best_f" != "$given_best" ] || { echo "BEST is FUSION/CYCLE, not '$given_best'" >&2; exit 2; }
[ -n "$given_best" ] || for f in 256K 1M 4M 16M 64M 128M; do
  for c in 0.1 0.5 1 2.5 5; do
    v=$(HV_FUSION_THRESHOLD=$f HV_CYCLE_TIME=$c run "sweep_${f}_$c" --epochs "$sweep_epochs")
    echo "sweep HV_FUSION_THRESHOLD=$f HV_CYCLE_TIME=$c ($sweep_epochs epochs): $v images/s"
    if awk -v a="$v" -v b="$best" 'BEGIN{exit !(a > b)}'; then best=$v best_f=$f best_c=$c; fi
  done
done
[ -n "$given_best" ] || echo "best of the sweep: HV_FUSION_THRESHOLD=$best_f HV_CYCLE_TIME=$best_c ($best images/s)"

manual=() tuned=() plain=()
for r in $(seq 1 "$rounds"); do
  m=$(HV_FUSION_THRESHOLD=$best_f HV_CYCLE_TIME=$best_c run "manual_$r")
  t=$(HV_AUTOTUNE=1 HV_AUTOTUNE_LOG="$work/tune_$r.csv" run "tuned_$r")
  d=$(run "default_$r")
  chose=$(grep '^chosen' "$work/tune_$r.csv" | cut -d, -f3,4 || true)
  echo "round $r (load $(cut -d' ' -f1 /proc/loadavg)): best manual $m, autotuned $t (chose $chose), defaults $d images/s"
  manual+=("$m") tuned+=("$t") plain+=("$d")
done
mm=$(median "${manual[@]}") mt=$(median "${tuned[@]}") md=$(median "${plain[@]}")
echo "medians over $rounds rounds of the default run: best manual $mm, autotuned $mt, defaults $md images/s"
awk -v t="$mt" -v m="$mm" -v d="$md" \
  'BEGIN{printf "autotuned / best manual: %.3f (goal >= 0.97); defaults / best manual: %.3f\n", t/m, d/m}'
