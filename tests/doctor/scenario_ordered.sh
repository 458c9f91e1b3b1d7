#!/bin/bash
# scenario_ordered.sh LAUNCHER...: GPU-style ordered calls in different orders (issue 22),
# on host buffers through the engine's ordered path (hv_bench_ordered_call of
# hv_internal_bench.h; skipped with 77 in a build without it). doctor_worker ordered:
# ordered allreduces, one after another; at call 8 rank 1 calls allgather where the
# others call allreduce. hv fails it or the ranks hang; the ranks linger 8 s in user
# code after a failure.
#  - `hvrun --status` then, and `hvrun --analyze` on the dumps (SIGUSR1 to every rank
#    still there, and the dumps at exit), say
#    verdict: ranks 0-3 issued different GPU collectives at sequence S: rank 1 called ...allgather..., the others ...allreduce...
# Env: HVRUN, DOCTOR_WORKER. Prints ok/FAIL lines; exit 0 when all pass.
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"; . "$H/../faults/faults_lib.sh"; . "$H/scenario_lib.sh"
N=4 V=1
LAUNCH=("$@")
doctor_setup ordered
if ! doctor_launch $N ordered --victim $V --step 4 --linger 8 --seconds 120; then
  grep -q "no ordered-call entry" "$W/out" && { echo "SKIP: this build has no hv_bench_ordered_call"; exit 77; }
  lib_summary; exit
fi
sleep 3 # the mismatched call fails or hangs by now
want="^ranks 0-$((N - 1)) issued different GPU collectives at sequence [0-9]+: rank $V called [a-z_]*allgather[a-z_]*, the others [a-z_]*allreduce"
doctor_status
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"
doctor_verdict "$W/status.txt" "status" "$want"
for p in $DOCTOR_PIDS; do faults_ended "$p" || kill -USR1 "$p"; done
doctor_wait_dumps $N 20 && lib_ok "$N dumps" || lib_bad "$(doctor_dumps) of $N dumps"
doctor_analyze
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"
doctor_verdict "$W/analyze.txt" "analyze" "$want"
doctor_end
lib_summary
