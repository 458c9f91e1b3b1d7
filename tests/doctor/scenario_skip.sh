#!/bin/bash
# scenario_skip.sh LAUNCHER...: a rank that skipped one tensor (issue 22). doctor_worker
# skip: from step 4 on rank 1 never submits 'grad/layer3' (a layer frozen on one rank)
# and goes on: it finishes the step's other layers and waits in the next collective
# ('ctl/go'), while the others wait for 'grad/layer3'. During the hang
# `hvrun --status`, and after SIGUSR1 (every rank dumps) `hvrun --analyze`, must say
#   verdict: rank 1 never submitted 'grad/layer3'; ...
# (the name held up longest, not the 'ctl/go' that rank 1 waits in).
# Env: HVRUN, DOCTOR_WORKER. Prints ok/FAIL lines; exit 0 when all pass.
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"; . "$H/../faults/faults_lib.sh"; . "$H/scenario_lib.sh"
N=4 V=1 L=3
LAUNCH=("$@")
doctor_setup skip
doctor_launch $N skip --victim $V --step 4 --layer $L --seconds 120 || { lib_summary; exit; }
for _ in $(seq 200); do grep -q "^SKIP rank=$V " "$W/out" && break; sleep 0.1; done
sleep 2
doctor_status
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"
doctor_verdict "$W/status.txt" "status during the hang" "^rank $V never submitted 'grad/layer$L'"
for p in $DOCTOR_PIDS; do kill -USR1 "$p"; done
doctor_wait_dumps $N 30 && lib_ok "$N dumps after SIGUSR1" || lib_bad "$(doctor_dumps) of $N dumps after SIGUSR1"
doctor_analyze
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"
doctor_verdict "$W/analyze.txt" "analyze" "^rank $V never submitted 'grad/layer$L'"
doctor_end
lib_summary
