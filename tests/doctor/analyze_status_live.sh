#!/bin/bash
# hvrun --status and --analyze on a real hang: mpirun -np 4 mpi_flight hang S
# (tests/collectives/mpi_flight.c: ranks 0,2,3 wait in the allreduce 'late' while rank 1
# sleeps S seconds in user code). While it hangs: --status must name rank 1 and 'late';
# with rank 2 stopped (SIGSTOP) as well, it must name both; after SIGUSR1 every rank
# dumps to HV_FLIGHT_RECORDER and --analyze on the dumps gives the same verdict.
# Usage: analyze_status_live.sh BUILD_DIR MPI_FLIGHT MPIRUN [MPIRUN_FLAGS...]
set -u
B=$(cd "$1" && pwd); H=$(cd "$(dirname "$0")" && pwd); PROG=$2; shift 2
. "$H/doctor_lib.sh"
HV=$B/bin/hvrun
W=$(mktemp -d /tmp/hv-doctor-live.XXXXXX)
export HV_STATUS_DIR=$W/status HV_FLIGHT_RECORDER=$W/dumps
mkdir -m 700 "$HV_STATUS_DIR" "$HV_FLIGHT_RECORDER"
MPID=
cleanup() { # the job's ranks end with mpirun; any left after 10 s are killed by pid
  local pids="" p
  for f in "$HV_STATUS_DIR"/*/rank*.pid; do [ -f "$f" ] && pids="$pids $(cat "$f")"; done
  for p in $pids; do kill -CONT "$p" 2>/dev/null; done
  [ -n "$MPID" ] && { kill -TERM "$MPID" 2>/dev/null; wait "$MPID" 2>/dev/null; }
  for _ in $(seq 100); do
    local alive=0
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$W"
}
trap cleanup EXIT
timeout --signal=KILL 120 "$@" -x HV_STATUS_DIR -x HV_FLIGHT_RECORDER -np 4 "$PROG" hang 25 > "$W/job.out" 2>&1 &
MPID=$!
NEVER="^verdict: rank 1 never submitted 'late'; its last submission was 'warmup' [0-9.]+ s ago and it has been in user code since$"
# the job starts (slowly on a loaded machine), then 'late' must be pending a while
out=
for _ in $(seq 120); do
  out=$("$HV" --status 2>&1) && printf '%s\n' "$out" | grep -Eq "$NEVER" && break
  kill -0 "$MPID" 2>/dev/null || break
  sleep 0.25
done
if printf '%s\n' "$out" | grep -Eq "$NEVER"; then lib_ok "--status names rank 1 sleeping in user code while 0,2-3 wait for 'late'"
else lib_bad "--status: no verdict on rank 1:"; printf '%s\n' "$out" | sed 's/^/    | /'; sed 's/^/    job| /' "$W/job.out" | tail; fi
printf '%s\n' "$out" | sed 's/^/    /'
J=$(ls -d "$HV_STATUS_DIR"/*/ 2>/dev/null | head -1)
lib_expect "--status: rank 0's line shows the wait" 0 "^rank 0 \(host [^,]+, pid [0-9]+\): negotiating for [0-9.]+ s; pending \(1\): 'late' allreduce" \
  "$HV" --status

if [ -f "$J/rank2.pid" ]; then
  kill -STOP "$(cat "$J/rank2.pid")"
  out=$("$HV" --status 2>&1)
  printf '%s\n' "$out" | grep -Eq "^verdict: rank 2 is stopped \(process state T: SIGSTOP or a debugger\) during 'late'$" &&
    printf '%s\n' "$out" | grep -Eq "$NEVER" && lib_ok "with rank 2 stopped too: both verdicts" ||
    { lib_bad "rank 2 stopped:"; printf '%s\n' "$out" | sed 's/^/    | /'; }
  kill -CONT "$(cat "$J/rank2.pid")"
fi

# SIGUSR1: every rank dumps; --analyze must say the same
for f in "$J"/rank*.pid; do kill -USR1 "$(cat "$f")"; done
for _ in $(seq 100); do [ "$(ls "$HV_FLIGHT_RECORDER" | grep -c '\.json$')" = 4 ] && break; sleep 0.1; done
out=$("$HV" --analyze "$HV_FLIGHT_RECORDER" 2>&1); rc=$?
[ "$rc" = 0 ] && printf '%s\n' "$out" | head -1 | grep -Eq "$NEVER" && lib_ok "--analyze on the SIGUSR1 dumps names rank 1 and 'late'" ||
  { lib_bad "--analyze after SIGUSR1 (rc $rc):"; printf '%s\n' "$out" | sed 's/^/    | /' | head -20; }
lib_summary
