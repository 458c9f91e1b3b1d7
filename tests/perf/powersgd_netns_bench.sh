#!/bin/bash
# powersgd_netns_bench.sh BUILD_DIR [RATES="100mbit 1gbit"] [MODEL=wrn-16-4] [BATCH=32] [STEPS=12] [REPS=1]:
# training step time over slow links (issue #25): 2 emulated nodes x 1 rank
# (tests/cluster/: network namespaces, tbf at RATE on every node link), cifar_ddp
# with --comm-hook allreduce, fp16, int8 and powersgd:rank=4,start=2 against PyTorch
# 1.13 DDP (gloo) without a hook and with its powerSGD_hook at the same rank and start
# (tests/perf/torch_ddp_hook_steps.py, one process per node), in the same run, runs
# interleaved. Fashion-MNIST, global batch BATCH, 1 thread per rank.
# hv: epoch 2 of 2 of STEPS steps each (its "Comm hook" line: mean ms per step, bytes
# sent per step and compression ratio); torch: the mean of steps STEPS+1..2 STEPS.
# REPS rounds of all of it, one after the other (a busy machine's slow spells then hit
# every configuration); HV_BENCH_HOOKS="allreduce powersgd" leaves out int8 and fp16.
# A benchmark, not a test. Needs root and python3-torch; tears its nodes down on exit.
set -u
B=$(cd "$1" && pwd); RATES=${2:-100mbit 1gbit}; MODEL=${3:-wrn-16-4}; BATCH=${4:-32}; STEPS=${5:-12}; REPS=${6:-1}
HOOKS=${HV_BENCH_HOOKS:-allreduce powersgd int8 fp16}
C=$(cd "$(dirname "$0")/../cluster" && pwd); P=$(cd "$(dirname "$0")" && pwd)
export HV_NS=${HV_NS:-hvs} HV_NS_NET=${HV_NS_NET:-10.93.0}
"$C/netns-up.sh" 2 || exit 1
trap '"$C/netns-down.sh" >/dev/null 2>&1' EXIT
echo "# $(date -u '+%F %H:%M') $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), 2 nodes x 1 rank," \
  "$MODEL, global batch $BATCH, $STEPS steps measured"
hv() { # hv RATE HOOK
  out=$(timeout --signal=KILL 900 "$C/netns-mpirun" "${HV_NS}n0:1,${HV_NS}n1:1" 2 OPENBLAS_NUM_THREADS=1 \
    OMP_NUM_THREADS=1 -- "$B/workloads/cifar_ddp" --dataset fashion-mnist --model "$MODEL" --batch-size "$BATCH" \
    --epochs 2 --train-size $((BATCH * STEPS)) --test-size 64 --no-augment --no-prefetch --comm-hook "$2" 2>&1)
  line=$(printf '%s\n' "$out" | grep '^Comm hook' | tail -1)
  [ -n "$line" ] || line="FAILED: $(printf '%s\n' "$out" | tail -2 | tr '\n' ' ')"
  echo "$1 hv    $line"
}
torch() { # torch RATE HOOK
  args=(--world 2 --master "$HV_NS_NET.1" --model "$MODEL" --batch-size "$BATCH" --steps $((2 * STEPS))
    --warmup "$STEPS" --hook "$2")
  "$C/netns-node" "${HV_NS}n1" env GLOO_SOCKET_IFNAME=eth0 /usr/bin/python3 "$P/torch_ddp_hook_steps.py" --rank 1 "${args[@]}" >/dev/null 2>&1 &
  peer=$!
  line=$(timeout --signal=KILL 900 "$C/netns-node" "${HV_NS}n0" env GLOO_SOCKET_IFNAME=eth0 /usr/bin/python3 "$P/torch_ddp_hook_steps.py" --rank 0 \
    "${args[@]}" 2>&1 | grep '^torch' || echo FAILED)
  wait "$peer"
  echo "$1 torch $line"
}
for rep in $(seq "$REPS"); do
  for rate in $RATES; do
    "$C/netns-rate.sh" 2 "$rate"
    for h in $HOOKS; do
      case $h in
      allreduce) hv "$rate" allreduce; torch "$rate" none ;;
      powersgd) hv "$rate" powersgd:rank=4,start=2; torch "$rate" powersgd:4:2 ;;
      *) hv "$rate" "$h" ;;
      esac
    done
  done
done
