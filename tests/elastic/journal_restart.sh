#!/bin/bash
# journal_restart.sh BUILD svm|nn: mnist_svm or mnist_nn relaunched after a lost rank
# (issue 21), on the shipped MNIST subset cut to a few hundred images:
#   restart   hvrun --restarts 1 -np 2, rank 1 SIGKILLs itself after journalling 2 grid
#             units (HV_SVM_CRASH_AFTER_UNITS) or 1 bootstrap (HV_NN_CRASH_AFTER_BOOTSTRAPS,
#             early: the other rank takes bootstraps as it frees up): exit 0, hvrun's
#             restart line, "restart 1: K of N ... kept from the journal" with K > 0, the
#             reported results byte-identical to an uninterrupted 2-rank run, and every
#             unit's journalled numbers (timings and the rank aside) identical too
#   damaged   the restarted run's journal with one record's checksum broken and another
#             file's last line cut, resumed (--resume) on 1 rank: both named, not trusted,
#             exactly those 2 units computed again, results still identical
#   foreign   a journal written with another --seed, resumed: refused with a clear line,
#             exit 1
set -u
build=$1 what=$2
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"
B=$build
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
case $what in
  svm)
    prog=$B/workloads/mnist_svm
    ARGS=(--train-size 300 --test-size 100 --folds 3 --log-c-min 0 --log-c-max 1
          --log-gamma-min -3.5 --log-gamma-max -2.5 --no-plots 3)
    OTHER=(--seed 2)
    FILES="cv_errors.csv grid.csv folds.csv"
    CRASH=HV_SVM_CRASH_AFTER_UNITS; CRASH_RANK=HV_SVM_CRASH_RANK; AFTER=2
    KEPT="grid units kept from the journal"; N=27
    # unit <u> <errors> <cpu seconds> <crc>: the errors
    strip() { awk '{ print $1, $2, $3 }'; } ;;
  nn)
    prog=$B/workloads/mnist_nn
    ARGS=(--train-size 200 --test-size 100 --plot-first 2 --folds 3 --max-epochs 1 --seed 11
          --conv-min 2 --conv-max 5 --kernel-min 3 --kernel-max 6 --hidden-min 16 --hidden-max 33
          --log-lr-min -2 --log-lr-max -1.5 --log-momentum-min -0.5 --log-momentum-max -0.1
          --no-plots 8 2)
    OTHER=(--seed 12)
    FILES="models.csv search.csv predictions.csv"
    CRASH=HV_NN_CRASH_AFTER_BOOTSTRAPS; CRASH_RANK=HV_NN_CRASH_RANK; AFTER=1
    KEPT="bootstraps kept from the journal"; N=8
    # 2 settings: fields 3-14 settings and CV errors, 15-16 best and epochs, 17 the rank,
    # 18-19 train and test error, 20 seconds, then the probabilities, then the crc
    strip() { awk '{ $17 = ""; $20 = ""; $NF = ""; print }'; } ;;
  *) echo "usage: $0 BUILD svm|nn"; exit 2 ;;
esac
W=$(mktemp -d /tmp/hv-elastic-$what.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
mpirun_n() { local n=$1; shift; timeout --signal=KILL 120 mpirun --oversubscribe --bind-to none -np "$n" "$@"; }
units() { cat "$1"/journal/*.txt | grep '^unit ' | strip | sort -n -k2 | awk '!seen[$2]++'; }
same_results() { # DIR_A DIR_B WHAT
  local f bad=
  for f in $FILES; do cmp -s "$1/$f" "$2/$f" || bad="$bad $f"; done
  [ -z "$bad" ] && lib_ok "$3: $FILES identical to the uninterrupted run" || { lib_bad "$3: differ:$bad"; diff "$1/${bad# *}" "$2/${bad# *}" | head; }
}
t0=$(date +%s%N)

# The uninterrupted reference.
mpirun_n 2 "$prog" --results ra "${ARGS[@]}" >a.txt 2>&1 || { lib_bad "uninterrupted run: exit $?"; tail a.txt; }

# restart: through hvrun --restarts
env "$CRASH=$AFTER" "$CRASH_RANK=1" timeout --signal=KILL 200 "$B/bin/hvrun" --restarts 1 -np 2 \
  "$prog" --results rb "${ARGS[@]}" >b.txt 2>&1
rc=$?
[ "$rc" = 0 ] && lib_ok "restart: exit 0 after one restart" || { lib_bad "restart: exit $rc"; grep -v '^\[' b.txt | tail -30; }
grep -Eq "^hvrun: restart 1 of 1: lost rank 1 on host [^ ]+ \(killed by signal 9\)" b.txt &&
  lib_ok "restart: hvrun names the lost rank" || lib_bad "restart: no restart line"
line=$(grep -E "^mnist_$what: restart 1: [0-9]+ of $N $KEPT, [0-9]+ to compute$" b.txt)
kept=$(printf '%s\n' "$line" | sed -n 's/^[^:]*: restart 1: \([0-9]*\) of.*/\1/p')
[ -n "$kept" ] && [ "$kept" -gt 0 ] && lib_ok "restart: $line" || { lib_bad "restart: no kept line with a count > 0"; grep -i journal b.txt; }
same_results ra rb restart
[ -n "$(units ra)" ] && [ "$(units ra)" = "$(units rb)" ] && lib_ok "restart: all $N units' journalled numbers identical" ||
  lib_bad "restart: journalled numbers differ: $(diff <(units ra) <(units rb) | head -5)"

# damaged: one checksum broken, one last line cut; resumed on another world size
cp -r rb rd
f2=rd/journal/attempt-0-rank-1.txt   # the killed rank's: its last unit to be cut
f1=
for f in rd/journal/*.txt; do [ "$f" != "$f2" ] && sed -n 2p "$f" | grep -q '^unit ' && { f1=$f; break; }; done
u1=$(sed -n '2s/^unit \([0-9]*\) .*/\1/p' "$f1")
sed -i '2s/^\(unit [0-9]* [0-9]*\)/\1 7/' "$f1"        # a changed number: checksum mismatch
n2=$(grep -c '^unit ' "$f2")
u2=$(tail -1 "$f2" | cut -d' ' -f2)
truncate -s -4 "$f2"                                    # the last line cut: truncated
mpirun_n 1 "$prog" --results rd --resume "${ARGS[@]}" >d.txt 2>&1 &&
  lib_ok "damaged: the resumed run exits 0" || { lib_bad "damaged: exit $?"; tail -20 d.txt; }
grep -Eq "^mnist_$what: warning: $f1 line 2: checksum mismatch: the record of unit $u1 is not trusted" d.txt &&
  lib_ok "damaged: the broken checksum is named (unit $u1)" || { lib_bad "damaged: checksum line missing"; grep warning d.txt; }
grep -Eq "^mnist_$what: warning: $f2 line $((n2 + 1)): truncated line: the record of unit $u2 is not trusted" d.txt &&
  lib_ok "damaged: the cut line is named (unit $u2)" || { lib_bad "damaged: truncated line missing"; grep warning d.txt; }
grep -Eq "^mnist_$what: resume: $((N - 2)) of $N $KEPT \(2 damaged records not trusted\), 2 to compute$" d.txt &&
  lib_ok "damaged: $((N - 2)) of $N kept, 2 computed again" || { lib_bad "damaged: no kept line"; grep -i journal d.txt; }
[ "$(grep -c '^unit ' rd/journal/attempt-0-rank-0.1.txt 2>/dev/null)" = 2 ] &&
  lib_ok "damaged: the new journal file holds the 2 recomputed units" || lib_bad "damaged: new journal: $(ls rd/journal)"
same_results ra rd damaged

# foreign: another configuration's journal is refused, not mixed in
cp -r ra rf
mpirun_n 1 "$prog" --results rf --resume "${ARGS[@]}" "${OTHER[@]}" >f.txt 2>&1; rc=$?
[ "$rc" = 1 ] && grep -Eq "error: the journal rf/journal/attempt-0-rank-[01].txt was written by another configuration \(it differs in: seed; .*it is not mixed in; remove it or choose another --results" f.txt &&
  lib_ok "foreign: refused (exit 1) with a clear line" || { lib_bad "foreign: exit $rc"; grep -v '^\[' f.txt | tail; }
echo "# $what: $(lib_ms "$t0") ms in all"
lib_summary
