#!/bin/bash
# scenario_shape.sh LAUNCHER...: the same name with different shapes (issue 22).
# doctor_worker shape: at step 4 ranks 2-3 submit 'grad/layer5' with 131072 floats,
# ranks 0-1 with 65536. hv fails it on every rank (HV_ERR_MISMATCH); each rank then
# stays 5 s in user code (--linger) before it shuts down and exits 3.
#  - while they linger, `hvrun --status`, and afterwards `hvrun --analyze` on the
#    dumps written at exit, say
#    verdict: ranks 0-1 and ranks 2-3 submitted 'grad/layer5' differently: allreduce float32 x65536 against allreduce float32 x131072
# Env: HVRUN, DOCTOR_WORKER. Prints ok/FAIL lines; exit 0 when all pass.
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"; . "$H/../faults/faults_lib.sh"; . "$H/scenario_lib.sh"
N=4 L=5
LAUNCH=("$@")
doctor_setup shape
doctor_launch $N shape --step 4 --layer $L --linger 5 --seconds 120 || { lib_summary; exit; }
for _ in $(seq 200); do [ "$(grep -c '^FAILED rank=' "$W/out")" -ge $N ] && break; sleep 0.1; done
[ "$(grep -c "^FAILED rank=[0-9]* step=4: mismatch: .*'grad/layer$L'" "$W/out")" = $N ] &&
  lib_ok "every rank failed 'grad/layer$L' with HV_ERR_MISMATCH" ||
  { lib_bad "not every rank failed with HV_ERR_MISMATCH:"; grep -E '^(FAILED|\[hv)' "$W/out" | head; }
want="^ranks 0-1 and ranks 2-3 submitted 'grad/layer$L' differently: allreduce float32 x65536 against allreduce float32 x131072"
doctor_status
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"
doctor_verdict "$W/status.txt" "status while the ranks linger" "$want"
faults_wait_end "$W/out" "$(date +%s%N)"
doctor_wait_dumps $N 10 && lib_ok "$N dumps at exit" || lib_bad "$(doctor_dumps) of $N dumps at exit"
doctor_analyze
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"
doctor_verdict "$W/analyze.txt" "analyze" "$want"
doctor_end
lib_summary
