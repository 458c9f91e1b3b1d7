#!/bin/bash
# scenario_shutdown.sh LAUNCHER...: a rank that shut down early (issue 22).
# doctor_worker shutdown: at step 4 rank 1 calls hv_shutdown instead of submitting
# 'grad/layer3' (it submitted 'grad/layer7'..'grad/layer4') and exits 0; the others'
# requests for 'grad/layer3'..'grad/layer0' fail with HV_ERR_SHUT_DOWN, and they stay
# 5 s in user code (--linger) before exiting 3.
#  - while they linger, `hvrun --status`, and afterwards `hvrun --analyze` on the dumps
#    (rank 1's written at its hv_shutdown, the others' at exit), say
#    verdict: rank 1 shut down (hv_shutdown) while ranks 0,2-3 wait for 'NAME'
#    with NAME one of the names rank 1 never submitted ('grad/layer3'..'grad/layer0',
#    'ctl/go').
# Env: HVRUN, DOCTOR_WORKER. Prints ok/FAIL lines; exit 0 when all pass.
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"; . "$H/../faults/faults_lib.sh"; . "$H/scenario_lib.sh"
N=4 V=1 L=3
LAUNCH=("$@")
doctor_setup shutdown
doctor_launch $N shutdown --victim $V --step 4 --layer $L --linger 5 --seconds 120 || { lib_summary; exit; }
for _ in $(seq 200); do [ "$(grep -c '^FAILED rank=' "$W/out")" -ge $((N - 1)) ] && break; sleep 0.1; done
grep -q "^SHUTDOWN rank=$V step=4 before 'grad/layer$L'" "$W/out" && lib_ok "rank $V called hv_shutdown at step 4" ||
  lib_bad "rank $V did not say SHUTDOWN"
others=$(doctor_ranks $(seq 0 $((N - 1)) | grep -vx $V))
want="^rank $V shut down \(hv_shutdown\) while ranks $others wait for '(grad/layer[0-$L]|ctl/go)'"
doctor_status
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"
doctor_verdict "$W/status.txt" "status while the others linger" "$want"
faults_wait_end "$W/out" "$(date +%s%N)"
doctor_wait_dumps $N 10 && lib_ok "$N dumps" || lib_bad "$(doctor_dumps) of $N dumps"
doctor_analyze
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"
doctor_verdict "$W/analyze.txt" "analyze" "$want"
doctor_end
lib_summary
