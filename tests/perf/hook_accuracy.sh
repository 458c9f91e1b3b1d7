#!/bin/bash
# hook_accuracy.sh BUILD_DIR OUT_DIR [EPOCHS=3] [TRAIN=4096|full] [TEST=1024] [SEEDS="1 2 3"] [HOOKS=...]:
# final validation accuracy of cifar_ddp WRN-10-1 on Fashion-MNIST (2 ranks on this
# machine, no link limit: accuracy does not depend on the link) with each comm hook,
# the same epochs, data and seeds; prints every run's final accuracy and wall time,
# each hook's median over the seeds and its difference to the uncompressed median, and
# plots the validation accuracy per epoch, one line per hook and seed
# (OUT_DIR/accuracy_hooks.png). Issue #25's goal: PowerSGD and int8 within 0.5 points
# of uncompressed (median of 3 seeds). A benchmark, not a test.
#
# TRAIN=full runs the main job's recipe unchanged (cifar_ddp's defaults: all 60,000
# training and 10,000 test images, global batch 512, lr 0.1 x 512/256 after a one-epoch
# warm-up, cosine decay; TEST is then ignored), e.g.
#   tests/perf/hook_accuracy.sh build out 5 full - "1 2 3" \
#     "allreduce powersgd:rank=4,start=117 int8"
# (117 steps of 512 images are one epoch, the warm-up: PowerSGD starts after it, as
# PyTorch's docs advise for start_powerSGD_iter). A number for TRAIN gives a short
# stand-in on the first TRAIN/TEST images at global batch 128 and lr 0.05.
# The runs go seed by seed (every hook for seed 1, then seed 2...), so an interrupted
# sweep still compares the hooks on the seeds it finished; REUSE=1 keeps the runs of an
# earlier sweep into OUT_DIR that finished all their epochs (to finish a sweep, or to
# redraw the plot). OUT_DIR/accuracy_hooks.csv lists every run's validation accuracy
# per epoch (hook,seed,epoch,val_accuracy); the plot has one colour per hook and one
# dash pattern per seed.
set -u
B=$(cd "$1" && pwd); OUT=$2; EPOCHS=${3:-3}; TRAIN=${4:-4096}; TEST=${5:-1024}; SEEDS=${6:-1 2 3}
HOOKS=${7:-allreduce powersgd:rank=4,start=10 int8}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ "$TRAIN" = full ]; then
  recipe=()   # the main job: cifar_ddp's defaults
  what="all 60000 training / 10000 test images, the main job's recipe (global batch 512, lr 0.2, warm-up, cosine)"
else
  recipe=(--batch-size 128 --base-lr 0.05 --train-size "$TRAIN" --test-size "$TEST")
  what="$TRAIN training / $TEST test images, global batch 128, lr 0.05"
fi
med() { sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : ""}'; }
dir_of() { echo "$OUT/$(echo "$1" | tr ':,=' '___')_seed$2"; }
echo "# $(date -u '+%F %H:%M') wrn-10-1 fashion-mnist, $EPOCHS epochs, $what, seeds $SEEDS; load $(cut -d' ' -f1-3 /proc/loadavg)"
for seed in $SEEDS; do
  for hook in $HOOKS; do
    d=$(dir_of "$hook" "$seed")
    if [ "${REUSE:-0}" = 1 ] && [ -s "$d/results.csv" ] && [ "$(($(wc -l < "$d/results.csv") - 1))" -ge "$EPOCHS" ]; then
      echo "$hook seed $seed: final validation accuracy $(awk -F, 'END { print $5 }' "$d/results.csv") (kept from an earlier sweep)"
      continue
    fi
    t0=$(date +%s)
    mpirun --oversubscribe -np 2 -x OPENBLAS_NUM_THREADS=1 "$B/workloads/cifar_ddp" --dataset fashion-mnist \
      --model wrn-10-1 "${recipe[@]}" --epochs "$EPOCHS" --seed "$seed" --comm-hook "$hook" \
      --results "$d" --no-plots > "$d.log" 2>&1 ||
      { echo "$hook seed $seed: FAILED ($(tail -1 "$d.log"))"; continue; }
    echo "$hook seed $seed: final validation accuracy $(awk -F, 'END { print $5 }' "$d/results.csv")," \
      "$(( $(date +%s) - t0 )) s, load $(cut -d' ' -f1-3 /proc/loadavg); $(grep '^Comm hook' "$d.log" | tail -1)"
  done
done
plot=""
echo "hook,seed,epoch,val_accuracy" > "$OUT/accuracy_hooks.csv"
h=0
for hook in $HOOKS; do
  accs=""
  h=$((h + 1)); s=0
  for seed in $SEEDS; do
    d=$(dir_of "$hook" "$seed")
    s=$((s + 1))
    [ -s "$d/results.csv" ] || continue
    accs="$accs $(awk -F, 'END { print $5 }' "$d/results.csv")"
    awk -F, -v h="$hook" -v s="$seed" 'NR > 1 { print h "," s "," $1 "," $5 }' "$d/results.csv" >> "$OUT/accuracy_hooks.csv"
    plot="$plot${plot:+, }'$d/results.csv' using 1:5 with linespoints lc $h dt $s title '$hook seed $seed'"
  done
  m=$(echo "$accs" | tr ' ' '\n' | grep . | med)
  [ "$hook" = allreduce ] && base=$m
  echo "$hook: median final accuracy $m of ($accs ) ${base:+$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%+.2f points vs allreduce", 100 * (a - b) }')}"
done
gnuplot -e "set terminal png size 900,600; set output '$OUT/accuracy_hooks.png'; set datafile separator ',';
  set key bottom right; set xtics 1; set xlabel 'epoch'; set ylabel 'validation accuracy'; plot $plot" 2>/dev/null &&
  echo "plot: $OUT/accuracy_hooks.png"
