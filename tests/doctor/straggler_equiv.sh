#!/bin/bash
# straggler_equiv.sh: HV_STRAGGLER_REPORT=1 adds a line's end and changes no result
# (issue 22). Each workload runs twice on 2 ranks, with the report off and on:
#   cifar_ddp (tiny CIFAR-10, 2 epochs of 4 steps, checkpoints): results.csv equal but
#     for the time columns, the checkpoints (.hvckpt) byte for byte; with the report each epoch
#     line ends "straggler rank R +L ms (p50, 4 steps)" (R 0 or 1: every step's first
#     bucket is timed), without it no line says "straggler";
#   mnist_svm (300 images, 2 x 2 grid, 2 folds): cv_errors.csv equal; the
#     cross-validation line ends "straggler rank R +L ms (p50, 1 step)";
#   mnist_nn (2 bootstraps of small nets): models.csv, predictions.csv, search.csv equal
#     (timing.csv holds times); the time line names the straggler of the search's end
#     (1 step);
# hv_straggler_report on 2 ranks of doctor_worker, rank 1 slowed by 30 ms: named with
# a lag of 15-60 ms, results unchanged; and HV_STRAGGLER_REPORT=yes is refused with one
# line naming it.
# Env: CIFAR_DDP, MAKE_TINY, MNIST_SVM, MNIST_NN, DOCTOR_WORKER, MPIRUN (mpirun and its
# flags).
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 HV_PROGRESS=lines
W=$(mktemp -d /tmp/hv-straggler-equiv.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
run() { # run OUT REPORT CMD...: under mpirun -np 2, output in OUT, exit code in RC
  local out=$1 rep=$2; shift 2
  HV_STRAGGLER_REPORT=$rep timeout --signal=KILL 120 $MPIRUN -np 2 "$@" > "$out" 2>&1; RC=$?
}
same() { # same WHAT A B: files equal
  if cmp -s "$2" "$3"; then lib_ok "$1: identical with and without the report"
  else lib_bad "$1 differs:"; diff "$2" "$3" | head -6 | sed 's/^/    | /'; fi
}
lines() { # lines WHAT FILE ERE COUNT
  local c; c=$(grep -Ec -- "$3" "$2")
  [ "$c" = "$4" ] && lib_ok "$1: $4 line(s) /$3/: $(grep -E -- "$3" "$2" | head -1)" ||
    { lib_bad "$1: $c line(s) match /$3/, expected $4"; grep -v '^\[' "$2" | tail -15 | sed 's/^/    | /'; }
}

mkdir -p data && "$MAKE_TINY" data 32 32 > /dev/null || lib_bad "make_tiny_cifar"
args=(--dataset cifar10 --data-dir data --lr-scaling none --base-lr 0.1 --batch-size 16 --train-size 64 --epochs 2)
for rep in 0 1; do
  run cifar$rep.txt $rep "$CIFAR_DDP" "${args[@]}" --results cr$rep --checkpoint-dir ck$rep
  [ $RC = 0 ] && lib_ok "cifar_ddp, report $rep: exit 0" || { lib_bad "cifar_ddp, report $rep: exit $RC"; tail -20 cifar$rep.txt; }
  cut -d, -f1-5,8-10 cr$rep/results.csv > cr$rep.csv
done
same "cifar_ddp results.csv (all but the time columns)" cr0.csv cr1.csv
n=0; for f in ck0/*.hvckpt; do [ -f "$f" ] || continue; n=$((n + 1)); same "cifar_ddp checkpoint $(basename "$f")" "$f" "ck1/$(basename "$f")"; done
[ $n -gt 0 ] || lib_bad "cifar_ddp wrote no checkpoint in ck0"
lines "cifar_ddp, report on" cifar1.txt '^Epoch [12]/2 completed in [0-9.]+ seconds straggler rank [01] [-+][0-9]+\.[0-9] ms \(p50, 4 steps\)$' 2
lines "cifar_ddp, report off" cifar0.txt 'straggler' 0

for rep in 0 1; do
  run svm$rep.txt $rep "$MNIST_SVM" --train-size 300 --folds 2 --no-refit --no-plots --results sv$rep 2
  [ $RC = 0 ] && lib_ok "mnist_svm, report $rep: exit 0" || { lib_bad "mnist_svm, report $rep: exit $RC"; tail -20 svm$rep.txt; }
done
same "mnist_svm cv_errors.csv" sv0/cv_errors.csv sv1/cv_errors.csv
lines "mnist_svm, report on" svm1.txt '^cross-validation took .* straggler rank [01] [-+][0-9]+\.[0-9] ms \(p50, 1 step\)$' 1
lines "mnist_svm, report off" svm0.txt 'straggler' 0

nn=(--train-size 400 --test-size 200 --plot-first 2 --conv-min 2 --conv-max 5 --kernel-min 3 --kernel-max 6
    --hidden-min 16 --hidden-max 33 --log-lr-min -2 --log-lr-max -1.5 --log-momentum-min -0.5 --log-momentum-max -0.1
    --max-epochs 2 --folds 2 --no-plots)
for rep in 0 1; do
  run nn$rep.txt $rep "$MNIST_NN" "${nn[@]}" --results nr$rep 2 1
  [ $RC = 0 ] && lib_ok "mnist_nn, report $rep: exit 0" || { lib_bad "mnist_nn, report $rep: exit $RC"; tail -20 nn$rep.txt; }
done
for b in models.csv predictions.csv search.csv; do same "mnist_nn $b" "nr0/$b" "nr1/$b"; done
lines "mnist_nn, report on" nn1.txt '^time taken: [0-9.]+ s on 2 rank\(s\) straggler rank [01] [-+][0-9]+\.[0-9] ms \(p50, 1 step\);' 1
lines "mnist_nn, report off" nn0.txt 'straggler' 0

# hv_straggler_report itself on 2 ranks (doctor_worker): rank 1 pausing 30 ms before
# each step names it every 10 steps with a lag of 15-60 ms; 30 steps give the same
# results (checksum) with the reports and the delay as without.
run w1.txt 0 "$DOCTOR_WORKER" run --steps 30 --victim 1 --delay-ms 30 --report-every 10
run w0.txt 0 "$DOCTOR_WORKER" run --steps 30
bad=$(grep '^STRAGGLER ' w1.txt | awk '{ split($3, r, "="); split($4, l, "="); if (r[2] != 1 || l[2] < 15 || l[2] > 60) print }')
[ "$(grep -c '^STRAGGLER ' w1.txt)" = 3 ] && [ -z "$bad" ] &&
  lib_ok "2 ranks: 3 reports name rank 1, lag 15-60 ms: $(grep '^STRAGGLER ' w1.txt | cut -d' ' -f3-4 | tr '\n' ' ')" ||
  { lib_bad "2 ranks: reports: $(grep '^STRAGGLER ' w1.txt | tr '\n' ' ')"; tail -5 w1.txt; }
c1=$(sed -n 's/^DONE .* checksum=//p' w1.txt | sort -u); c0=$(sed -n 's/^DONE .* checksum=//p' w0.txt | sort -u)
[ -n "$c0" ] && [ "$c1" = "$c0" ] && lib_ok "2 ranks, 30 steps: the same results with and without the reports ($c0)" ||
  lib_bad "2 ranks: checksums with reports '$c1', without '$c0'"

run bad.txt yes "$CIFAR_DDP" "${args[@]}" --results crb
[ $RC != 0 ] && grep -q "HV_STRAGGLER_REPORT='yes' is not valid: expected 0 or 1" bad.txt &&
  lib_ok "HV_STRAGGLER_REPORT=yes: refused naming it (exit $RC)" || { lib_bad "HV_STRAGGLER_REPORT=yes: exit $RC"; tail -5 bad.txt; }
lib_summary
