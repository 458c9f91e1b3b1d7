#!/bin/bash
# time_to_accuracy_netns.sh BUILD_DIR [RATE=100mbit] [SEEDS="1 2 3"] [HOOKS=...] [TARGET=0.88]:
# time to accuracy over a slow link (issue #25): 2 emulated nodes x 1 rank
# (tests/cluster/: network namespaces, tbf at RATE on every node link), cifar_ddp
# WRN-10-1 on Fashion-MNIST at global batch 32 (lr 0.1, cosine over 2 epochs, no
# warm-up), validating on the whole test set every 200 steps (--eval-every) and
# stopping when validation accuracy first reaches TARGET; prints each run's wall
# seconds to the target (with and without the validations), its step, and each hook's median over
# the seeds, seed by seed with the hooks interleaved (a slow spell of the machine then
# hits every hook). HOOKS defaults to "allreduce powersgd:rank=4,start=200 int8".
# A benchmark, not a test. Needs root; tears its nodes down on exit.
set -u
B=$(cd "$1" && pwd); RATE=${2:-100mbit}; SEEDS=${3:-1 2 3}
HOOKS=${4:-allreduce powersgd:rank=4,start=200 int8}; TARGET=${5:-0.88}
C=$(cd "$(dirname "$0")/../cluster" && pwd)
export HV_NS=${HV_NS:-hvt} HV_NS_NET=${HV_NS_NET:-10.94.0}
"$C/netns-up.sh" 2 || exit 1
trap '"$C/netns-down.sh" >/dev/null 2>&1' EXIT
"$C/netns-rate.sh" 2 "$RATE" || exit 1
echo "# $(date -u '+%F %H:%M') $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)," \
  "2 nodes x 1 rank at $RATE, WRN-10-1, global batch 32, target $TARGET"
res=$(mktemp /tmp/tta.XXXXXX)
for seed in $SEEDS; do
  for h in $HOOKS; do
    out=$(timeout --signal=KILL 1800 "$C/netns-mpirun" "${HV_NS}n0:1,${HV_NS}n1:1" 2 OPENBLAS_NUM_THREADS=1 \
      OMP_NUM_THREADS=1 -- "$B/workloads/cifar_ddp" --dataset fashion-mnist --model wrn-10-1 --batch-size 32 \
      --base-lr 0.05 --warmup-epochs 0 --epochs 2 --eval-every 200 --target-accuracy "$TARGET" --patience 1 \
      --seed "$seed" --no-prefetch --comm-hook "$h" 2>&1)
    line=$(printf '%s\n' "$out" | grep '^Time to accuracy' | tail -1)
    hook=$(printf '%s\n' "$out" | grep '^Comm hook' | tail -1 | sed 's/^Comm hook .*: \([0-9]* bytes\)/\1/')
    if [ -n "$line" ]; then
      secs=$(printf '%s\n' "$line" | sed 's/^Time to accuracy [0-9.]*: \([0-9.]*\) seconds.*/\1/')
      train=$(printf '%s\n' "$line" | sed 's/.*; \([0-9.]*\) seconds without.*/\1/')
      step=$(printf '%s\n' "$line" | sed 's/.*(step \([0-9]*\);.*/\1/')
      echo "$h seed $seed: $secs s to $TARGET ($train s without the validations) at step $step ($hook)"
      echo "$h $secs $train" >>"$res"
    else
      echo "$h seed $seed: not reached: $(printf '%s\n' "$out" | grep -E '^(Final|cifar_ddp)' | tail -2 | tr '\n' ' ')"
    fi
  done
done
for h in $HOOKS; do
  for col in 2 3; do
    awk -v h="$h" -v c=$col '$1 == h { print $c }' "$res" | sort -g |
      awk -v h="$h" -v c=$col '{ v[++n] = $1 } END { if (n) printf "median %s: %.1f s %s over %d run(s)\n", h,
        v[int((n + 1) / 2)], c == 2 ? "(validations included)" : "(without the validations)", n }'
  done
done
rm -f "$res"
