#!/bin/bash
# scenario_dead.sh LAUNCHER...: a dead rank (issue 22). doctor_worker runs; once every
# rank is READY the harness kills rank 1 with SIGKILL. The others find it gone (same
# host: within ~10 ms), write their dumps (reason peer_lost), fail and linger 4 s in
# user code before exiting 3. (Under mpirun the launcher must let them linger: the
# CMake test passes --mca orte_abort_on_non_zero_status 0.)
#  - `hvrun --status` while they linger, and `hvrun --analyze` on the dumps, say
#    verdict: rank 1 died (its process is gone) during 'NAME'
#    NAME one of the tensors the survivors list as pending in their hv error line.
# Env: HVRUN, DOCTOR_WORKER. Prints ok/FAIL lines; exit 0 when all pass.
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"; . "$H/../faults/faults_lib.sh"; . "$H/scenario_lib.sh"
N=4 V=1
LAUNCH=("$@")
doctor_setup dead
doctor_launch $N run --linger 4 --seconds 120 || { lib_summary; exit; }
kill -KILL "$(doctor_pid $V)"
doctor_wait_dumps $((N - 1)) 15 && lib_ok "$((N - 1)) dumps after the kill" || lib_bad "$(doctor_dumps) of $((N - 1)) dumps after the kill"
doctor_status
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"
doctor_wait_ranks 30 && lib_ok "the survivors exited" || lib_bad "survivors still running 30 s after the kill"
# the names the survivors say they were waiting for
names=$(sed -n "s/^\[hv rank [0-9]*\] error: .*is gone.*pending tensors ([0-9]*): //p" "$W/out" | tr ',' '\n' |
        sed -n "s/^ *'\([^']*\)'.*/\1/p" | sort -u | tr '\n' '|' | sed 's/|$//')
[ -n "$names" ] && lib_ok "the survivors were waiting for: $names" || lib_bad "no survivor named its pending tensors"
want="^rank $V died \(its process is gone\) during '(${names:-none})'"
doctor_verdict "$W/status.txt" "status while the survivors linger" "$want"
doctor_analyze
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"
doctor_verdict "$W/analyze.txt" "analyze" "$want"
doctor_end
lib_summary
