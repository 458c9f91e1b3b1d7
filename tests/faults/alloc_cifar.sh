#!/bin/sh
# alloc_cifar.sh WORK CIFAR_DDP MAKE_TINY_CIFAR: one run of cifar_ddp for the
# out-of-memory sweep (alloc_sweep.sh): on 1 rank, resumed from a checkpoint of one
# epoch, one more epoch on tiny CIFAR-10 files, so the CIFAR readers, the checkpoint
# load and save, the trainer and the engine all allocate. The data and the first
# epoch's checkpoint are made once in WORK, with no failure injected; each run then
# starts from a fresh copy of that checkpoint.
set -eu
work=$1 cifar=$2 tiny=$3
args="--dataset cifar10 --data-dir $work/data --batch-size 8 --train-size 16 --test-size 8 --no-plots --quiet"
if [ ! "$work/ready" -nt "$cifar" ]; then # made by this build of cifar_ddp
  rm -rf "$work" && mkdir -p "$work/data"
  env -u HV_FAIL_ALLOC -u HV_FAIL_ALLOC_COUNT "$tiny" "$work/data" 8 8 >/dev/null
  env -u HV_FAIL_ALLOC -u HV_FAIL_ALLOC_COUNT "$cifar" $args --epochs 1 --checkpoint-dir "$work/ck0" >/dev/null
  touch "$work/ready"
fi
rm -rf "$work/run" && mkdir -p "$work/run" && cp -r "$work/ck0" "$work/run/ck"
exec "$cifar" $args --epochs 2 --checkpoint-dir "$work/run/ck" --results "$work/run/res" --resume
