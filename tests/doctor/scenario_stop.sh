#!/bin/bash
# scenario_stop.sh LAUNCHER...: a stopped rank (issue 22). doctor_worker runs; once every
# rank is READY the harness SIGSTOPs rank 2. With HV_STALL_CHECK_TIME=2 the others'
# stall reports write their dumps (reason stall); the stopped rank writes none and its
# status socket cannot answer.
#  - `hvrun --status` (the stopped rank's socket times out: /proc says state T) and
#    `hvrun --analyze` on the others' dumps, with rank 2 still stopped, say
#    verdict: rank 2 is stopped (process state T: SIGSTOP or a debugger) during 'NAME'
#    NAME one of the worker's tensors ('grad/layerK' or 'ctl/go');
#  - after SIGCONT the job goes on and ends normally (a stop is not a failure): exit 0.
# Env: HVRUN, DOCTOR_WORKER, HV_STALL_CHECK_TIME (2), HV_TIMEOUT (above the stop).
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"; . "$H/../faults/faults_lib.sh"; . "$H/scenario_lib.sh"
N=4 V=2
LAUNCH=("$@")
doctor_setup stop
doctor_launch $N run --seconds 120 --stop-file "$W/stop" || { lib_summary; exit; }
vpid=$(doctor_pid $V)
kill -STOP "$vpid"
doctor_wait_dumps $((N - 1)) 20 && lib_ok "$((N - 1)) stall dumps" || lib_bad "$(doctor_dumps) of $((N - 1)) stall dumps"
want="^rank $V is stopped \(process state T: SIGSTOP or a debugger\) during '(grad/layer[0-7]|ctl/go)'"
doctor_status
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"
doctor_verdict "$W/status.txt" "status of the stopped job" "$want"
doctor_analyze
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"
doctor_verdict "$W/analyze.txt" "analyze (rank $V still stopped)" "$want"
kill -CONT "$vpid"
touch "$W/stop"
faults_wait_end "$W/out" "$(date +%s%N)"
[ "$FAULTS_RC" = 0 ] && [ "$(grep -c '^DONE rank=' "$W/out")" = $N ] &&
  lib_ok "after SIGCONT every rank finished (launcher exit 0)" ||
  { lib_bad "after SIGCONT: launcher exit $FAULTS_RC, $(grep -c '^DONE rank=' "$W/out") of $N ranks DONE"; tail -20 "$W/out" | sed 's/^/    | /'; }
doctor_end
lib_summary
