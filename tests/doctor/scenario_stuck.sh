#!/bin/bash
# scenario_stuck.sh LAUNCHER...: a rank stuck in user code (issue 22). doctor_worker
# stuck: at step 4 rank 1 submits 'grad/layer7'..'grad/layer4', then sleeps for ever
# before 'grad/layer3'; the other ranks wait for it. LAUNCHER: mpirun ... -np 4, or
# hvrun -np 4 (the worker and its arguments are appended).
#  - during the hang, `hvrun --status` names rank 1 and 'grad/layer3';
#  - SIGUSR1 to every rank writes the dumps (reason signal); `hvrun --analyze` on them:
#    verdict: rank 1 never submitted 'grad/layer3'; its last submission was
#    'grad/layer4' T s ago and it has been in user code since
#    with T the time from the STUCK line to the signal (within a loaded machine's slack).
# Env: HVRUN, DOCTOR_WORKER (set by CMake). Prints ok/FAIL lines; exit 0 when all pass.
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"; . "$H/../faults/faults_lib.sh"; . "$H/scenario_lib.sh"
N=4 V=1 L=3
LAUNCH=("$@")
doctor_setup stuck
doctor_launch $N stuck --victim $V --step 4 --layer $L --seconds 120 || { lib_summary; exit; }
for _ in $(seq 200); do grep -q "^STUCK rank=$V " "$W/out" && break; sleep 0.1; done
t_stuck=$(date +%s%N)
sleep 2 # the others submit the step's layers and wait
doctor_status
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"
doctor_verdict "$W/status.txt" "status during the hang" "^rank $V never submitted 'grad/layer$L'"
for p in $DOCTOR_PIDS; do kill -USR1 "$p"; done
t_sig=$(date +%s%N)
doctor_wait_dumps $N 30 && lib_ok "$N dumps after SIGUSR1" || lib_bad "$(doctor_dumps) of $N dumps after SIGUSR1"
doctor_analyze
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"
doctor_verdict "$W/analyze.txt" "analyze" \
  "^rank $V never submitted 'grad/layer$L'; its last submission was 'grad/layer$((L + 1))' [0-9.]+ s ago and it has been in user code since"
ago=$(sed -n "s/^verdict: rank $V never submitted .* \([0-9.]*\) s ago.*/\1/p" "$W/analyze.txt" | head -1)
want=$(( (t_sig - t_stuck) / 1000000 ))
awk -v a="${ago:-x}" -v w="$want" 'BEGIN { exit !(a ~ /^[0-9.]+$/ && a * 1000 >= w - 1000 && a * 1000 <= w + 10000) }' &&
  lib_ok "'$ago s ago' agrees with the $want ms from the STUCK line to SIGUSR1" ||
  lib_bad "'${ago:-?} s ago', but $want ms passed from the STUCK line to SIGUSR1"
doctor_end
lib_summary
