#!/bin/bash
# cifar_restart.sh BUILD: cifar_ddp relaunched after a lost rank (issue 21), on tiny
# CIFAR-format data (make_tiny_cifar), augmentation off:
#   same_np     hvrun --restarts 1 -np 2, rank 1 SIGKILLed after step 6: the job resumes
#               from the peer checkpoint of step 5 in memory (one step lost) and its
#               results and final checkpoint are bitwise those of an uninterrupted run;
#               the figure: seconds from the kill to the relaunched job's first step
#   corrupt     the newest peer copy damaged between the attempts: named, the previous
#               copy used; every copy damaged: --checkpoint-dir used; results still equal
#   other_np    killed in a 4-rank job, relaunched on 2 ranks x 2 micro-batches from the
#               peer copy: final parameters those of the uninterrupted 4-rank run within
#               the N-to-M bound of tests/cifar (1e-3)
# The attempts of corrupt and other_np are run by hand, as hvrun --restarts runs them
# (same HV_RUN_DIR, HV_RESTART 0 then 1), so the test can act between them.
set -u
build=$1
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"
B=$build
cifar=$B/workloads/cifar_ddp
W=$(mktemp -d /tmp/hv-elastic-cifar.XXXXXX)
trap 'rm -rf "$W" /dev/shm/hv-peer-hv-elastic-run.*' EXIT
cd "$W" || exit 1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 HV_PROGRESS=lines
mkdir data && "$B/tests/cifar/make_tiny_cifar" data 32 32 >/dev/null || { echo "FAIL - make_tiny_cifar"; exit 1; }
ARGS="--dataset cifar10 --data-dir data --lr-scaling none --base-lr 0.1 --batch-size 16 --train-size 64 --epochs 3 --no-augment --peer-checkpoint-every 1"
CK=ckpt-step-000000000012.hvckpt
mpirun_n() { local n=$1; shift; timeout --signal=KILL 120 mpirun --oversubscribe --bind-to none -np "$n" "$@"; }
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }
same_results() { # A.csv B.csv WHAT: training and validation columns equal as text
  if diff <(cut -d, -f1-5,8-10 "$1") <(cut -d, -f1-5,8-10 "$2") >/dev/null; then lib_ok "$3: results.csv equal (loss, accuracy, lr, steps, images)"
  else lib_bad "$3: results differ:"; diff <(cut -d, -f1-5,8-10 "$1") <(cut -d, -f1-5,8-10 "$2") | sed 's/^/    | /'; fi
}

# The uninterrupted references: 2 and 4 ranks.
mpirun_n 2 "$cifar" $ARGS --checkpoint-dir ca --results ra >a.txt 2>&1 || { lib_bad "uninterrupted 2 ranks"; tail a.txt; }
mpirun_n 4 "$cifar" $ARGS --checkpoint-dir c4 --results r4 >a4.txt 2>&1 || { lib_bad "uninterrupted 4 ranks"; tail a4.txt; }

# same_np: through hvrun --restarts
HV_CIFAR_CRASH_AT_STEP=6 HV_CIFAR_CRASH_RANK=1 timeout --signal=KILL 200 "$B/bin/hvrun" --restarts 1 -np 2 \
  "$cifar" $ARGS --checkpoint-dir cb --results rb 2>&1 | stamp >b.txt
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] && lib_ok "same_np: exit 0 after one restart" || { lib_bad "same_np: exit $rc"; grep -v '\] \[' b.txt | tail -30; }
grep -Eq " hvrun: restart 1 of 1: lost rank 1 on host [^ ]+ \(killed by signal 9\)" b.txt && lib_ok "same_np: hvrun names the lost rank" || lib_bad "same_np: no restart line"
grep -Eq " Restart 1: resuming from the peer checkpoint of step 5 in memory .*disk: step 4\)$" b.txt &&
  lib_ok "same_np: resumed from the peer copy of step 5 (one step lost)" || { lib_bad "same_np: no resume line"; grep -i resum b.txt; }
same_results ra/results.csv rb/results.csv same_np
cmp -s "ca/$CK" "cb/$CK" && lib_ok "same_np: final checkpoint bitwise equal to the uninterrupted run" || lib_bad "same_np: final checkpoints differ"
[ -z "$(ls /dev/shm | grep '^hv-peer-hvrun\.')" ] && lib_ok "same_np: no peer copy left in /dev/shm" || lib_bad "same_np: left in /dev/shm: $(ls /dev/shm | grep hv-peer)"
t_kill=$(grep -m1 "exited on signal 9\|killed by signal 9" b.txt | cut -d' ' -f1)
t_first=$(grep -E " Epoch [0-9]+/3 step [0-9]+/4 " b.txt | awk -v k="$t_kill" '$1 > k { print $1; exit }')
t_line=$(grep -m1 " hvrun: restart 1 of 1" b.txt | cut -d' ' -f1)
echo "# same_np: restart line $(awk -v a="$t_kill" -v b="$t_line" 'BEGIN{printf "%.2f", b-a}') s after mpirun's kill report; first step of the relaunched job $(awk -v a="$t_kill" -v b="$t_first" 'BEGIN{printf "%.2f", b-a}') s after it"

# corrupt: attempts by hand
run_dir=$(mktemp -d /tmp/hv-elastic-run.XXXXXX)
peer=/dev/shm/hv-peer-$(basename "$run_dir")
mkdir -p "$run_dir/attempt-0" "$run_dir/attempt-1"
HV_RUN_DIR=$run_dir HV_RESTART=0 HV_CIFAR_CRASH_AT_STEP=6 mpirun_n 2 -x HV_RUN_DIR -x HV_RESTART -x HV_CIFAR_CRASH_AT_STEP \
  "$cifar" $ARGS --checkpoint-dir cc --results rc >c0.txt 2>&1 && lib_bad "corrupt: the killed attempt exited 0"
newest=$(ls "$peer"/*.hvckpt 2>/dev/null | sort | tail -1)
[ -n "$newest" ] && lib_ok "corrupt: peer copies in $peer: $(ls "$peer" | grep -c hvckpt)" || lib_bad "corrupt: no peer copy in $peer"
printf '\377' | dd of="$newest" bs=1 seek=300 conv=notrunc 2>/dev/null
cp -r "$peer" peer_saved
cp -r cc cc_at_kill   # the disk checkpoints at the kill: step 4 (epoch 1)
HV_RUN_DIR=$run_dir HV_RESTART=1 mpirun_n 2 -x HV_RUN_DIR -x HV_RESTART "$cifar" $ARGS --checkpoint-dir cc --results rc >c1.txt 2>&1 &&
  lib_ok "corrupt: the relaunch exits 0" || { lib_bad "corrupt: relaunch failed"; tail -20 c1.txt; }
grep -Eq "^cifar_ddp: --resume: $newest: checksum mismatch" c1.txt && lib_ok "corrupt: the damaged copy is named" || { lib_bad "corrupt: damaged copy not named"; grep -v '\] \[' c1.txt | head; }
grep -Eq "^Restart 1: resuming from the peer checkpoint of step 4 in memory" c1.txt && lib_ok "corrupt: the previous copy (step 4) used" || lib_bad "corrupt: not resumed from step 4"
same_results ra/results.csv rc/results.csv corrupt
# every copy damaged: --checkpoint-dir
rm -rf "$peer" rd && cp -r peer_saved "$peer" && mkdir rd
for f in "$peer"/*.hvckpt; do printf '\377' | dd of="$f" bs=1 seek=300 conv=notrunc 2>/dev/null; done
cp -r cc_at_kill cd_ckpt
HV_RUN_DIR=$run_dir HV_RESTART=1 mpirun_n 2 -x HV_RUN_DIR -x HV_RESTART "$cifar" $ARGS --checkpoint-dir cd_ckpt --results rd >c2.txt 2>&1 &&
  lib_ok "corrupt all: the relaunch exits 0" || { lib_bad "corrupt all: relaunch failed"; tail -20 c2.txt; }
grep -Eq "^cifar_ddp: restart 1: the peer checkpoint of step 5 is not usable .*resuming from --checkpoint-dir" c2.txt &&
  lib_ok "corrupt all: says it falls back to --checkpoint-dir" || { lib_bad "corrupt all: no fallback line"; grep -v '\] \[' c2.txt | head; }
grep -Eq "^Resuming from cd_ckpt/ckpt-step-000000000004.hvckpt" c2.txt && lib_ok "corrupt all: the disk checkpoint of step 4 used" || lib_bad "corrupt all: disk checkpoint not used"
same_results ra/results.csv rd/results.csv "corrupt all"
rm -rf "$peer"

# other_np: 4 ranks killed, 2 ranks x 2 micro-batches resume from the peer copy
mkdir -p "$run_dir/attempt-2" "$run_dir/attempt-3"
HV_RUN_DIR=$run_dir HV_RESTART=0 HV_CIFAR_CRASH_AT_STEP=6 HV_CIFAR_CRASH_RANK=3 mpirun_n 4 -x HV_RUN_DIR -x HV_RESTART \
  -x HV_CIFAR_CRASH_AT_STEP -x HV_CIFAR_CRASH_RANK "$cifar" $ARGS --checkpoint-dir ce >e0.txt 2>&1
HV_RUN_DIR=$run_dir HV_RESTART=1 mpirun_n 2 -x HV_RUN_DIR -x HV_RESTART "$cifar" $ARGS --checkpoint-dir ce --micro-batches 2 >e1.txt 2>&1 &&
  lib_ok "other_np: relaunched on 2 ranks" || { lib_bad "other_np: relaunch failed"; tail -20 e1.txt; }
grep -Eq "^Restart 1: resuming from the peer checkpoint of step 5 in memory .*another world size" e1.txt &&
  lib_ok "other_np: resumed from the peer copy of step 5" || { lib_bad "other_np: no resume line"; grep -i resum e1.txt; }
"$B/tests/cifar/compare_ckpt" 10 1 10 3 "c4/$CK" "ce/$CK" 1e-3 >cmp.txt 2>&1 && lib_ok "other_np: $(cat cmp.txt)" || { lib_bad "other_np: $(cat cmp.txt)"; }
rm -rf "$peer" "$run_dir"
lib_summary
