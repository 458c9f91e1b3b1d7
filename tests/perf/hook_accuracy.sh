#!/bin/bash
# hook_accuracy.sh BUILD_DIR OUT_DIR [EPOCHS=3] [TRAIN=4096] [TEST=1024] [SEEDS="1 2 3"] [HOOKS=...]:
# final validation accuracy of cifar_ddp WRN-10-1 on Fashion-MNIST (2 ranks on this
# machine, no link limit: accuracy does not depend on the link) with each comm hook,
# the same epochs, data and seeds; prints every run's final accuracy, each hook's
# median over the seeds and its difference to the uncompressed median, and plots the
# validation accuracy per epoch, one line per hook and seed (OUT_DIR/accuracy_hooks.png).
# Issue #25's goal: PowerSGD and int8 within 0.5 points of uncompressed. A benchmark.
set -u
B=$(cd "$1" && pwd); OUT=$2; EPOCHS=${3:-3}; TRAIN=${4:-4096}; TEST=${5:-1024}; SEEDS=${6:-1 2 3}
HOOKS=${7:-allreduce powersgd:rank=4,start=10 int8}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
med() { sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : ""}'; }
echo "# $(date -u '+%F %H:%M') wrn-10-1 fashion-mnist, $EPOCHS epochs, $TRAIN training / $TEST test images, seeds $SEEDS"
plot=""
for hook in $HOOKS; do
  accs=""
  for seed in $SEEDS; do
    d="$OUT/$(echo "$hook" | tr ':,=' '___')_seed$seed"
    mpirun --oversubscribe -np 2 -x OPENBLAS_NUM_THREADS=1 "$B/workloads/cifar_ddp" --dataset fashion-mnist \
      --model wrn-10-1 --batch-size 128 --base-lr 0.05 --epochs "$EPOCHS" --train-size "$TRAIN" \
      --test-size "$TEST" --seed "$seed" --comm-hook "$hook" --results "$d" --no-plots > "$d.log" 2>&1 ||
      { echo "$hook seed $seed: FAILED ($(tail -1 "$d.log"))"; continue; }
    a=$(awk -F, 'END { print $5 }' "$d/results.csv")
    echo "$hook seed $seed: final validation accuracy $a; $(grep '^Comm hook' "$d.log" | tail -1)"
    accs="$accs $a"
    plot="$plot${plot:+, }'$d/results.csv' using 1:5 with linespoints title '$hook seed $seed'"
  done
  m=$(echo "$accs" | tr ' ' '\n' | grep . | med)
  [ "$hook" = allreduce ] && base=$m
  echo "$hook: median final accuracy $m (${base:+$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%+.2f points vs allreduce", 100 * (a - b) }')})"
done
gnuplot -e "set terminal png size 900,600; set output '$OUT/accuracy_hooks.png'; set datafile separator ',';
  set key bottom right; set xlabel 'epoch'; set ylabel 'validation accuracy'; plot $plot" 2>/dev/null &&
  echo "plot: $OUT/accuracy_hooks.png"
