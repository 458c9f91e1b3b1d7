#!/bin/sh
# cifar_test.sh: the cifar_ddp tests, one case per ctest test (see CMakeLists.txt).
# Each case makes its own tiny CIFAR-10 set (make_tiny_cifar) in its own folder, runs
# cifar_ddp under the real mpirun and checks exit codes, output lines and files.
#   sh cifar_test.sh CASE [NP]
# Environment (set by CMake): CIFAR_DDP, MAKE_TINY, COMPARE_CKPT, HV_MPIRUN (mpirun and
# its flags), WORK (a scratch folder for this case).
# Cases: smoke NP | fashion | cifar100 | equiv | early_stop | resume | resume_fallback |
#        resume_other_np | bad_flags | batch_lt_ranks | missing_data | comm_hooks |
#        comm_hook_resume | uneven | sync_bn | eval_every
set -u
CASE=$1
NP=${2:-2}
W="$WORK/$CASE$NP"
rm -rf "$W"
mkdir -p "$W"
cd "$W" || exit 1

fail() {
  echo "FAIL ($CASE): $*"
  for f in out.txt err.txt; do
    [ -f "$f" ] && { echo "---- $f"; tail -n 40 "$f"; }
  done
  exit 1
}

# run NP args...: cifar_ddp under mpirun; stdout in out.txt, stderr in err.txt, $RC.
run() {
  n=$1
  shift
  # shellcheck disable=SC2086
  $HV_MPIRUN -np "$n" "$CIFAR_DDP" "$@" >out.txt 2>err.txt
  RC=$?
}

expect() { # expect FILE ERE [COUNT]: the pattern occurs (COUNT times when given)
  c=$(grep -Ec -- "$2" "$1")
  if [ $# -ge 3 ]; then
    [ "$c" -eq "$3" ] || fail "$1: expected $3 line(s) matching '$2', found $c"
  else
    [ "$c" -ge 1 ] || fail "$1: no line matches '$2'"
  fi
}

expect_error() { # expect_error ERE: non-zero exit and exactly one error line, matching ERE
  [ "$RC" -ne 0 ] || fail "exit code 0, expected a failure"
  expect err.txt '^cifar_ddp: rank [0-9]+: error: ' 1
  expect err.txt "^cifar_ddp: rank [0-9]+: error: .*$1"
}

tiny() { # tiny DIR [PER_FILE] [TEST]: a learnable CIFAR-10 set of 5 x PER_FILE images
  mkdir -p "$1"
  "$MAKE_TINY" "$1" "${2:-32}" "${3:-32}" || fail "make_tiny_cifar failed"
}

# csv_col FILE ROW COL: one value of results.csv (ROW 1 = first epoch).
csv_col() { awk -F, -v r="$2" -v c="$3" 'NR == r + 1 { print $c }' "$1"; }

# uninterrupted_and_killed STEP: tiny data; 3 epochs uninterrupted (ca/, ra/), and the
# same with rank 0 killed (SIGKILL) right after STEP (cb/, rb/). Sets ARGS.
uninterrupted_and_killed() {
  tiny data
  ARGS="$COMMON --batch-size 16 --train-size 64 --epochs 3"
  run "$NP" $ARGS --checkpoint-dir ca --results ra
  [ "$RC" -eq 0 ] || fail "uninterrupted run: exit code $RC"
  export HV_CIFAR_CRASH_AT_STEP="$1"
  run "$NP" $ARGS --checkpoint-dir cb --results rb
  unset HV_CIFAR_CRASH_AT_STEP
  [ "$RC" -ne 0 ] || fail "the killed run exited 0"
}

# resumed CKPT_DIR RESULTS_DIR CKPT STEPS: cifar_ddp --resume from CKPT_DIR exits 0 and
# says it loaded CKPT, with 1 epoch and STEPS steps done.
resumed() {
  run "$NP" $ARGS --checkpoint-dir "$1" --results "$2" --resume
  [ "$RC" -eq 0 ] || fail "resumed run from $1: exit code $RC"
  expect out.txt "^Resuming from $3: 1 epochs and $4 steps done\$" 1
}

# same_epochs A.csv B.csv "ROWS" "COLS" WHAT: the results agree to 1e-6 (relative above
# 1) in every ROW and COL; else fail naming WHAT, the epoch and the column.
same_epochs() {
  for row in $3; do
    for col in $4; do
      a=$(csv_col "$1" "$row" "$col")
      b=$(csv_col "$2" "$row" "$col")
      awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a;
        exit !(a != "" && d <= 1e-6 * (m > 1 ? m : 1)) }' ||
        fail "$5, epoch $row column $col: uninterrupted $a, resumed $b"
    done
  done
}

COMMON="--dataset cifar10 --data-dir data --lr-scaling none --base-lr 0.1"

case "$CASE" in
smoke)
  tiny data
  run "$NP" $COMMON --batch-size 32 --epochs 3 --results res
  [ "$RC" -eq 0 ] || fail "exit code $RC"
  expect out.txt "^World size: $NP\$" 1
  expect out.txt "^Number of nodes: 1\$" 2
  expect out.txt "^Ranks per node: $NP\$" 2
  expect out.txt '^Model: wrn-10-1 '
  expect out.txt '^Epoch [1-3]/3 completed in [0-9]+\.[0-9]+ seconds$' 3
  expect out.txt '^Validation Loss: [0-9]+\.[0-9]+, Validation Accuracy: [01]\.[0-9]+$' 3
  expect out.txt '^Epoch Throughput: [0-9]+\.[0-9]+ images/second$' 3
  expect out.txt '^Training completed in [0-9.]+ seconds$' 1
  expect out.txt "^Total ranks: $NP\$" 1
  expect res/results.csv '^[1-3],' 3
  expect res/results.json "\"world_size\": $NP,"
  expect res/results.json '"stopped_early": false'
  l1=$(csv_col res/results.csv 1 2)
  l3=$(csv_col res/results.csv 3 2)
  awk -v a="$l1" -v b="$l3" 'BEGIN { exit !(a + 0 == a && b + 0 == b && b < a && b > 0) }' ||
    fail "training loss not finite and decreasing: epoch 1 $l1, epoch 3 $l3"
  if command -v gnuplot >/dev/null 2>&1; then
    for p in loss accuracy throughput; do
      head -c 4 "res/$p.png" | grep -q PNG || fail "res/$p.png is not a PNG"
    done
  fi
  echo "smoke np=$NP: training loss $l1 -> $l3"
  ;;
comm_hooks)
  # Every hook trains (loss decreasing) and prints its bytes per step and ratio.
  tiny data
  for h in allreduce:1.00 fp16:2.00 bf16:2.00 int8:3.9 powersgd:rank=2,start=2:; do
    hook=${h%:*}
    run "$NP" $COMMON --batch-size 32 --epochs 3 --comm-hook "$hook" --results "res_$hook"
    [ "$RC" -eq 0 ] || fail "--comm-hook $hook: exit code $RC"
    expect out.txt "^Comm hook $hook: [0-9]+ bytes sent per step, compression ratio ${h##*:}[0-9.]*x, [0-9.]+ ms per step\$" 3
    l1=$(csv_col "res_$hook/results.csv" 1 2)
    l3=$(csv_col "res_$hook/results.csv" 3 2)
    awk -v a="$l1" -v b="$l3" 'BEGIN { exit !(a + 0 == a && b + 0 == b && b < a && b > 0) }' ||
      fail "--comm-hook $hook: training loss not finite and decreasing: $l1 -> $l3"
    echo "comm hook $hook np=$NP: training loss $l1 -> $l3; $(grep '^Comm hook' out.txt | tail -1)"
  done
  ;;
comm_hook_resume)
  # PowerSGD's error buffers and Q are kept per rank beside the checkpoints: a run
  # stopped by --max-steps mid-epoch 2 and resumed repeats the uninterrupted epochs;
  # with the hook files removed it warns on every rank and differs.
  tiny data
  ARGS="$COMMON --batch-size 16 --train-size 64 --epochs 3 --comm-hook powersgd:rank=2,start=2"
  run "$NP" $ARGS --checkpoint-dir ca --results ra
  [ "$RC" -eq 0 ] || fail "uninterrupted run: exit code $RC"
  run "$NP" $ARGS --checkpoint-dir cc --max-steps 6
  [ "$RC" -eq 0 ] || fail "--max-steps run: exit code $RC"
  for r in $(seq 0 $((NP - 1))); do
    [ -f "cc/hook-step-000000000006.rank$r" ] || fail "no hook state of rank $r at step 6"
  done
  cp -r cc cd
  run "$NP" $ARGS --checkpoint-dir cc --results rc --resume
  [ "$RC" -eq 0 ] || fail "resumed run: exit code $RC"
  expect err.txt 'starts with empty state' 0
  same_epochs ra/results.csv rc/results.csv "2 3" "4 5" "resume with the hook state"
  rm cd/hook-step-*
  run "$NP" $ARGS --checkpoint-dir cd --results rd --resume
  [ "$RC" -eq 0 ] || fail "resumed run without hook state: exit code $RC"
  expect err.txt "^cifar_ddp: warning: rank [0-9]+: --comm-hook powersgd:rank=2,start=2 starts with empty state" "$NP"
  [ "$(csv_col ra/results.csv 3 4)" != "$(csv_col rd/results.csv 3 4)" ] ||
    fail "the resume without the hook state gave the uninterrupted validation loss: the check cannot fail"
  echo "comm_hook_resume np=$NP: epochs 2-3 equal with the hook state (val loss $(csv_col rc/results.csv 3 4))," \
    "differ without ($(csv_col rd/results.csv 3 4))"
  ;;
fashion)
  FM=/usr/share/datasets/fashion-mnist
  [ -f "$FM/train-images-idx3-ubyte.gz" ] || { echo "SKIP: $FM missing"; exit 77; }
  run "$NP" --batch-size 32 --epochs 2 --train-size 256 --test-size 64 --base-lr 0.05 \
    --results res
  [ "$RC" -eq 0 ] || fail "exit code $RC"
  expect out.txt "^Dataset: fashion-mnist from $FM \\(256 training, 64 test images of 1x32x32\\)"
  expect out.txt '^Epoch 2/2 completed in ' 1
  l1=$(csv_col res/results.csv 1 2)
  l2=$(csv_col res/results.csv 2 2)
  awk -v a="$l1" -v b="$l2" 'BEGIN { exit !(a + 0 == a && b + 0 == b && b < a) }' ||
    fail "training loss not finite and decreasing: $l1 -> $l2"
  echo "fashion np=$NP: training loss $l1 -> $l2"
  ;;
cifar100)
  # The CIFAR-100 layout (train.bin + test.bin, coarse and fine labels), gzip'ed, with
  # the parent folder named (the loader finds cifar-100-binary/), fp16 compression.
  mkdir -p c100/cifar-100-binary
  "$MAKE_TINY" c100/cifar-100-binary 16 32 100 || fail "make_tiny_cifar failed"
  gzip c100/cifar-100-binary/train.bin c100/cifar-100-binary/test.bin
  run "$NP" --dataset cifar100 --data-dir c100 --batch-size 16 --epochs 1 --compression fp16 \
    --results res
  [ "$RC" -eq 0 ] || fail "exit code $RC"
  expect out.txt '^Dataset: cifar100 from c100/cifar-100-binary \(80 training, 32 test images of 3x32x32\)$' 1
  expect out.txt '^Validation Loss: [0-9]+\.[0-9]+, Validation Accuracy: [01]\.[0-9]+$' 1
  expect res/results.json '"compression": "fp16"'
  ;;
equiv)
  # 4 ranks x batch 4 == 1 rank x 4 strided micro-batches of 4 (batch-norm groups
  # included), to the float32 bound of tests/trainer/test_ddp.c; and, as the control
  # that this comparison can fail, 1 rank with one batch of 16 differs.
  tiny data
  ARGS="$COMMON --batch-size 16 --no-augment --max-steps 3 --quiet"
  run 4 $ARGS --checkpoint-dir c4
  [ "$RC" -eq 0 ] || fail "4 ranks: exit code $RC"
  run 1 $ARGS --checkpoint-dir c1 --micro-batches 4
  [ "$RC" -eq 0 ] || fail "1 rank: exit code $RC"
  run 1 $ARGS --checkpoint-dir c1b
  [ "$RC" -eq 0 ] || fail "1 rank, one batch: exit code $RC"
  CK=ckpt-step-000000000003.hvckpt
  "$COMPARE_CKPT" 10 1 10 3 "c1/$CK" "c4/$CK" 1e-5 || fail "1 rank != 4 ranks"
  "$COMPARE_CKPT" 10 1 10 3 "c1b/$CK" "c4/$CK" 1e-5 --expect-differ ||
    fail "the negative control did not differ"
  ;;
sync_bn)
  # --sync-bn: 4 ranks x batch 4 == 1 rank x one batch of 16 (batch-norm statistics of
  # the global batch): the parameters after 3 steps within 1e-6 (issue #24; 1.0e-7
  # measured), as tests/trainer/test_sync_bn.c; the control: 4 ranks without it differ. Then a batch of 1 per rank: one error line, every rank
  # exits non-zero (directly, and through --micro-batches).
  tiny data
  ARGS="$COMMON --batch-size 16 --no-augment --max-steps 3 --quiet"
  run 4 $ARGS --checkpoint-dir c4 --sync-bn --results res
  [ "$RC" -eq 0 ] || fail "4 ranks: exit code $RC"
  expect res/results.json '"sync_bn": true,'
  run 1 $ARGS --checkpoint-dir c1b
  [ "$RC" -eq 0 ] || fail "1 rank, one batch: exit code $RC"
  run 4 $ARGS --checkpoint-dir c4local
  [ "$RC" -eq 0 ] || fail "4 ranks without --sync-bn: exit code $RC"
  CK=ckpt-step-000000000003.hvckpt
  "$COMPARE_CKPT" 10 1 10 3 "c1b/$CK" "c4/$CK" 1e-6 || fail "1 rank x 16 != 4 ranks x 4 with --sync-bn"
  "$COMPARE_CKPT" 10 1 10 3 "c1b/$CK" "c4local/$CK" 1e-6 --expect-differ ||
    fail "the negative control (no --sync-bn) did not differ"
  run 4 $COMMON --batch-size 4 --epochs 1 --sync-bn
  expect_error '--sync-bn needs at least 2 images per rank and forward pass: --batch-size 4 over 4 ranks gives 1'
  run 2 $COMMON --batch-size 8 --micro-batches 4 --epochs 1 --sync-bn
  expect_error '--sync-bn needs at least 2 images per rank and forward pass: .* in micro-batches gives 1'
  ;;
early_stop)
  tiny data
  run "$NP" $COMMON --batch-size 32 --epochs 6 --target-accuracy 0 --patience 2 --results res
  [ "$RC" -eq 0 ] || fail "exit code $RC"
  expect out.txt '^Target accuracy 0\.0000 reached for 2 epochs in a row: early stopping after epoch 2$' 1
  expect out.txt '^Epoch 3/6' 0
  expect res/results.json '"stopped_early": true'
  # Control: a target no run reaches here never stops early.
  run "$NP" $COMMON --batch-size 32 --epochs 2 --target-accuracy 1 --patience 1
  [ "$RC" -eq 0 ] || fail "control: exit code $RC"
  expect out.txt 'early stopping' 0
  expect out.txt '^Epoch 2/2 completed' 1
  ;;
eval_every)
  # --eval-every 5 on 10 steps an epoch: validations after steps 5 and 15 besides the
  # epochs' own (after 10 and 20: not twice), and the same training as without them (every
  # per-epoch figure but time equal to the digit); then early stopping on them, with
  # the time to accuracy; then its bad values.
  tiny data
  ARGS="$COMMON --batch-size 16 --no-augment --epochs 2 --target-accuracy 1"
  run "$NP" $ARGS --eval-every 5 --results re
  [ "$RC" -eq 0 ] || fail "--eval-every run: exit code $RC"
  expect out.txt '^Step [0-9]+ \(epoch [12]\): Validation Loss: [0-9.]+, Validation Accuracy: [0-9.]+, [0-9.]+ seconds since training started$' 2
  expect out.txt '^Step 5 \(epoch 1\)' 1
  expect out.txt '^Step 15 \(epoch 2\)' 1
  expect out.txt '^Time to accuracy' 0
  expect re/results.json '"eval_every": 5, "time_to_target_seconds": null, "time_to_target_training_seconds": null, "target_step": null'
  run "$NP" $ARGS --results rn
  [ "$RC" -eq 0 ] || fail "run without --eval-every: exit code $RC"
  for row in 1 2; do
    for col in 2 3 4 5 8 9; do
      a=$(csv_col re/results.csv "$row" "$col")
      b=$(csv_col rn/results.csv "$row" "$col")
      [ -n "$a" ] && [ "$a" = "$b" ] || fail "epoch $row column $col: $a with --eval-every, $b without"
    done
  done
  run "$NP" $COMMON --batch-size 16 --epochs 2 --target-accuracy 0 --patience 2 --eval-every 3 --results rs
  [ "$RC" -eq 0 ] || fail "early stopping run: exit code $RC"
  expect out.txt '^Target accuracy 0\.0000 reached for 2 validations in a row: early stopping at step 6$' 1
  expect out.txt '^Time to accuracy 0\.0000: [0-9.]+ seconds \(step 3; [0-9.]+ seconds without the validations\)$' 1
  expect out.txt '^Epoch 1/2 completed in [0-9.]+ seconds \(stopped early\)$' 1
  expect out.txt '^Epoch 2/2' 0
  expect rs/results.json '"stopped_early": true'
  expect rs/results.json '"target_step": 3}'
  run "$NP" $COMMON --eval-every -1
  expect_error "--eval-every: '-1' is not an integer"
  run "$NP" $COMMON --eval-every 5 --uneven
  expect_error '--uneven does not work with --eval-every'
  ;;
resume)
  # Uninterrupted 3 epochs vs. rank 0 killed (SIGKILL) in epoch 2, then --resume: the
  # resumed epochs must repeat the uninterrupted losses and accuracies.
  uninterrupted_and_killed 6
  [ -f cb/ckpt-step-000000000004.hvckpt ] || fail "no checkpoint of epoch 1 before the kill"
  [ -f rb/results.csv ] && fail "the killed run wrote results"
  resumed cb rb cb/ckpt-step-000000000004.hvckpt 4
  expect out.txt '^Epoch 1/3' 0
  expect out.txt '^Epoch 3/3 completed' 1
  same_epochs ra/results.csv rb/results.csv "1 2 3" "2 3 4 5" "resume after the kill"
  # The same after a --max-steps stop in the middle of epoch 2 (mid-epoch checkpoint).
  run "$NP" $ARGS --checkpoint-dir cc --max-steps 6
  [ "$RC" -eq 0 ] || fail "--max-steps run: exit code $RC"
  expect out.txt '^Stopped: --max-steps 6 reached$' 1
  resumed cc rc cc/ckpt-step-000000000006.hvckpt 6
  same_epochs ra/results.csv rc/results.csv "2 3" "4 5" "mid-epoch resume"
  echo "resume np=$NP: epochs 2-3 equal ($(csv_col rb/results.csv 3 4))"
  ;;
resume_fallback)
  # The newest checkpoint truncated (a crash while writing it, a lost write): --resume
  # names it and what is wrong, falls back to the previous one, and the resumed epochs
  # still repeat the uninterrupted run. With no readable checkpoint left: a clear error.
  uninterrupted_and_killed 10
  NEW=cb/ckpt-step-000000000008.hvckpt OLD=cb/ckpt-step-000000000004.hvckpt
  [ -f "$NEW" ] && [ -f "$OLD" ] || fail "expected the checkpoints of epochs 1 and 2"
  size=$(wc -c <"$NEW")
  head -c $((size / 2)) "$NEW" >cut && mv cut "$NEW"
  resumed cb rb "$OLD" 4
  expect err.txt "^cifar_ddp: --resume: $NEW: .*(truncated|short|size)" 1
  expect err.txt '^cifar_ddp: --resume: trying the previous checkpoint$' 1
  same_epochs ra/results.csv rb/results.csv "2 3" "4 5" "fallback resume"
  # Only damaged checkpoints (the resumed run's last two, each with a flipped byte):
  # --resume names each and then fails.
  mkdir cd
  cp cb/*.hvckpt cb/*.csv cd/
  for g in cd/*.hvckpt; do
    printf '\377' | dd of="$g" bs=1 seek=300 conv=notrunc 2>/dev/null
  done
  run "$NP" $ARGS --checkpoint-dir cd --resume
  expect_error "--resume: no readable checkpoint in cd \\(2 tried; the last: cd/ckpt-step-000000000008\\.hvckpt: checksum"
  expect err.txt '^cifar_ddp: --resume: cd/ckpt-step-000000000012\.hvckpt: checksum mismatch' 1
  echo "resume fallback np=$NP: epochs 2-3 equal after falling back to $OLD"
  ;;
resume_other_np)
  # A checkpoint written by 4 ranks resumed by 2 ranks with 2 micro-batches each (the
  # same global batch and batch-norm groups): the resumed run ends at the parameters
  # of the uninterrupted 4-rank run. Bound 1e-3: over 12 steps at learning rate 0.1 the
  # two ways of summing the same gradients drift apart to 1.5e-4 with the Winograd
  # convolutions (their rounding: tests/kernels/test_conv2d_dnnl.c; with direct ones,
  # HV_CONV_ALGO=direct, 7e-8), while a learning rate off by 0.1% ends 1e-2 apart.
  tiny data
  ARGS="$COMMON --batch-size 16 --train-size 64 --epochs 3 --no-augment --quiet"
  run 4 $ARGS --checkpoint-dir ca --results ra
  [ "$RC" -eq 0 ] || fail "uninterrupted 4 ranks: exit code $RC"
  export HV_CIFAR_CRASH_AT_STEP=6
  run 4 $ARGS --checkpoint-dir cb
  unset HV_CIFAR_CRASH_AT_STEP
  [ "$RC" -ne 0 ] || fail "the killed run exited 0"
  run 2 $ARGS --checkpoint-dir cb --results rb --resume --micro-batches 2
  [ "$RC" -eq 0 ] || fail "resumed on 2 ranks: exit code $RC"
  CK=ckpt-step-000000000012.hvckpt
  "$COMPARE_CKPT" 10 1 10 3 "ca/$CK" "cb/$CK" 1e-3 || fail "4 ranks != 4 ranks then 2 ranks"
  run 1 $ARGS --checkpoint-dir cb --resume --epochs 4 --micro-batches 2
  [ "$RC" -eq 0 ] || fail "resumed on 1 rank: exit code $RC"
  echo "resume 4 ranks -> 2 ranks: final parameters equal; -> 1 rank: ran"
  ;;
bad_flags)
  for c in "--batch-size abc|--batch-size: 'abc' is not an integer" \
    "--model wrn-11-2|depth must be 6n\\+4" \
    "--model resnet50|--model: 'resnet50' is not wrn-D-K" \
    "--dataset imagenet|--dataset: 'imagenet' is not one of cifar10, cifar100, fashion-mnist" \
    "--frobnicate|unknown option '--frobnicate'" \
    "--resume|--resume needs --checkpoint-dir" \
    "--epochs|--epochs: '\\(missing value\\)'" \
    "--epochs 0|--epochs: '0' is not an integer in \\[1," \
    "--target-accuracy 1.5|--target-accuracy: '1.5' is not a number in \\[0, 1\\]" \
    "--compression lz4|--compression: 'lz4' is not one of none, fp16" \
    "--device gpu|--device: 'gpu' is not one of cpu, cuda" \
    "--comm-hook topk|--comm-hook: unknown comm hook 'topk': expected allreduce, fp16, bf16, powersgd" \
    "--comm-hook powersgd:rank=0|--comm-hook: comm hook option rank='0' is not valid" \
    "--comm-hook powersgd:start=-1|--comm-hook: comm hook option start='-1' is not valid"; do
    args=${c%%|*}
    msg=${c#*|}
    # shellcheck disable=SC2086
    "$CIFAR_DDP" $args >out.txt 2>err.txt
    RC=$?
    [ "$RC" -eq 2 ] || fail "'$args': exit code $RC, expected 2"
    expect_error "$msg"
  done
  # Under mpirun: printed once, not once per rank.
  run 2 --batch-size -5
  expect_error "--batch-size: '-5' is not an integer"
  # --device cuda where no GPU is visible (forced, so this holds on a GPU machine too):
  # one line naming the cause, every rank out, before any data is read.
  export CUDA_VISIBLE_DEVICES=-1
  run 2 --device cuda --data-dir nowhere
  unset CUDA_VISIBLE_DEVICES
  expect_error 'no CUDA device is visible|this build has no GPU trainer'
  "$CIFAR_DDP" --help >out.txt 2>err.txt || fail "--help exit code $?"
  expect out.txt '^  --batch-size B +global batch over all ranks, split evenly \[512\]$' 1
  expect out.txt '^  --target-accuracy A ' 1
  ;;
batch_lt_ranks)
  tiny data
  run 4 $COMMON --batch-size 2
  expect_error '--batch-size 2 is smaller than the 4 ranks'
  ;;
missing_data)
  tiny data
  run 2 --dataset cifar10 --data-dir nowhere
  expect_error '--data-dir nowhere: no such directory .*cs\.toronto\.edu'
  mkdir -p fm
  run 2 --dataset fashion-mnist --data-dir fm
  expect_error 'fm/train-images-idx3-ubyte\.gz: no such file \(Fashion-MNIST\)'
  cp -r data nodata && rm nodata/test_batch.bin
  run 2 --dataset cifar10 --data-dir nodata
  expect_error 'nodata/test_batch\.bin: no such file .*cifar-10-binary\.tar\.gz'
  cp -r data trunc && head -c 5000 data/data_batch_3.bin >trunc/data_batch_3.bin
  run 2 --dataset cifar10 --data-dir trunc
  expect_error 'trunc/data_batch_3\.bin: truncated'
  cp -r data badlabel && printf '\310' | dd of=badlabel/data_batch_2.bin bs=1 seek=3073 \
    conv=notrunc 2>/dev/null
  run 2 --dataset cifar10 --data-dir badlabel
  expect_error 'badlabel/data_batch_2\.bin: record 1: label 200'
  run 2 --dataset cifar100 --data-dir data
  expect_error 'data/train\.bin: no such file .*cifar-100-binary'
  ;;
uneven)
  # 145 images over 3 ranks: shards of 49, 48, 48; 16 a step: rank 0 takes 4 steps
  # (the last of 1 image), ranks 1 and 2 take 3 and join. Every image once an epoch.
  tiny data
  run 3 $COMMON --batch-size 48 --train-size 145 --epochs 2 --uneven --results res
  [ "$RC" -eq 0 ] || fail "exit code $RC"
  expect out.txt '^Epoch [1-2]/2 completed in [0-9]+\.[0-9]+ seconds$' 2
  [ "$(csv_col res/results.csv 1 10)" = 145 ] || fail "epoch 1 trained on $(csv_col res/results.csv 1 10) images, expected each of the 145 once"
  [ "$(csv_col res/results.csv 2 9)" = 8 ] || fail "$(csv_col res/results.csv 2 9) steps after 2 epochs, expected 8 (the longest shard's 4 each)"
  run 2 $COMMON --uneven --micro-batches 2
  expect_error '--uneven does not work with --micro-batches > 1'
  ;;
*)
  echo "unknown case $CASE"
  exit 2
  ;;
esac
echo "PASS ($CASE $NP)"
