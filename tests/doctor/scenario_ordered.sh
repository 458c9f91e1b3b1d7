#!/bin/bash
# scenario_ordered.sh LAUNCHER...: GPU-style ordered calls in different orders (issue 22),
# on host buffers through the engine's ordered path (hv_bench_ordered_call of
# hv_internal_bench.h: hv_cuda.h's argument agreement, without a GPU; skipped with 77
# in a build without it). doctor_worker ordered: ordered allreduces one after another;
# at call 8 rank 1 calls allgather where the others call allreduce. Every rank fails it
# with HV_ERR_MISMATCH and stays 5 s in user code (--linger) before exiting 3.
#  - `hvrun --status` while they linger, and `hvrun --analyze` on the dumps written at
#    exit, say
#    verdict: ranks 0-3 issued different GPU collectives at sequence S: rank 1 called hv_allgather_cuda, the others hv_allreduce_cuda
#    with S = 9: the communicator's ordered calls are numbered from 1, and the
#    worker's call 8 (from 0) is the 9th.
# Env: HVRUN, DOCTOR_WORKER. Prints ok/FAIL lines; exit 0 when all pass.
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"; . "$H/../faults/faults_lib.sh"; . "$H/scenario_lib.sh"
N=4 V=1
LAUNCH=("$@")
doctor_setup ordered
if ! doctor_launch $N ordered --victim $V --step 4 --linger 5 --seconds 120; then
  grep -q "no ordered-call entry" "$W/out" && { echo "SKIP: this build has no hv_bench_ordered_call"; exit 77; }
  lib_summary; exit
fi
for _ in $(seq 200); do [ "$(grep -c '^FAILED rank=' "$W/out")" -ge $N ] && break; sleep 0.1; done
[ "$(grep -c "^FAILED rank=[0-9]* step=8: mismatch: .*different collective" "$W/out")" = $N ] &&
  lib_ok "every rank failed ordered call 8 with HV_ERR_MISMATCH (a different collective)" ||
  { lib_bad "not every rank failed call 8 with HV_ERR_MISMATCH:"; grep -E '^(FAILED|\[hv)' "$W/out" | cut -c1-200 | head; }
want="^ranks 0-$((N - 1)) issued different GPU collectives at sequence [0-9]+: rank $V called hv_allgather_cuda, the others hv_allreduce_cuda$"
doctor_status
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"
doctor_verdict "$W/status.txt" "status while the ranks linger" "$want"
faults_wait_end "$W/out" "$(date +%s%N)"
doctor_wait_dumps $N 10 && lib_ok "$N dumps at exit" || lib_bad "$(doctor_dumps) of $N dumps at exit"
doctor_analyze
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"
doctor_verdict "$W/analyze.txt" "analyze" "$want"
seq_s=$(sed -n 's/^verdict: .* at sequence \([0-9]*\):.*/\1/p' "$W/analyze.txt" | head -1)
[ "$seq_s" = 9 ] && lib_ok "the sequence named is 9: the worker's 9th ordered call (the recorder counts from 1)" ||
  lib_bad "sequence '${seq_s:-?}' named; the mismatched call is the worker's 9th"
doctor_end
lib_summary
