# scenario_lib.sh: helpers of the doctor scenarios (tests/doctor/scenario_*.sh, issue 22),
# sourced after tests/launch/launch_lib.sh (lib_ok / lib_bad / lib_summary) and
# tests/faults/faults_lib.sh (faults_start / faults_field / faults_wait_end).
#   doctor_setup NAME         a private work folder $W: dumps in $W/dumps
#                             (HV_FLIGHT_RECORDER), status sockets under $W/status
#                             (HV_STATUS_DIR), the launch's output in $W/out; removed
#                             at exit (kept, and named, when DOCTOR_KEEP=1)
#   doctor_launch N ARGS...   the launcher (this script's LAUNCH array) with the worker
#                             ($DOCTOR_WORKER) and ARGS, in the background; waits for N
#                             READY lines (faults_start); returns 1 if they never came
#   doctor_pid R / doctor_host R   rank R's pid / host from its READY line
#   doctor_status             `hvrun --status` now, its output in $W/status.txt (rc in
#                             DOCTOR_RC); a status that hangs is killed after 30 s
#   doctor_analyze            `hvrun --analyze $W/dumps` into $W/analyze.txt (DOCTOR_RC)
#   doctor_wait_dumps N S     waits up to S seconds for N dump files; 1 if fewer came
#   doctor_wait_ranks S       waits up to S seconds for every READY rank to end
#   doctor_verdict FILE WHAT ERE    ok when FILE has verdicts (lines "verdict: ...") and
#                             every one matches ERE (after "verdict: "): the right rank,
#                             tensor and cause, and no consequence blamed on another
#                             rank; else FAIL, showing FILE
#   doctor_ranks LIST         "0-1", "0,2-3": a list of ranks as the verdicts write it
#   doctor_end                kills what is left of the launch: the ranks (by their pids),
#                             then the launcher if it has not ended 3 s later (Open MPI's
#                             mpirun may hang once a rank was killed and the others exited
#                             under orte_abort_on_non_zero_status=0); checks no rank is left
# Every step prints an ok/FAIL line; the script ends with lib_summary.
# shellcheck shell=bash disable=SC2034
: "${HVRUN:?HVRUN: the hvrun to test}" "${DOCTOR_WORKER:?DOCTOR_WORKER: the doctor_worker}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FAULTS_TIMEOUT=${FAULTS_TIMEOUT:-90}

doctor_setup() {
  W=$(mktemp -d "/tmp/hv-doctor-$1.XXXXXX")
  mkdir -m 700 "$W/dumps" "$W/status"
  export HV_FLIGHT_RECORDER=$W/dumps HV_STATUS_DIR=$W/status
  DOCTOR_NAME=$1 DOCTOR_PIDS= FAULTS_LP=
  trap doctor_cleanup EXIT
}

doctor_cleanup() {
  doctor_end quiet
  if [ "${DOCTOR_KEEP:-0}" = 1 ]; then echo "# kept $W"; else rm -rf "$W"; fi
}

doctor_launch() {
  local n=$1; shift
  DOCTOR_PIDS=
  if ! faults_start "$W/out" "$n" "${LAUNCH[@]}" "$DOCTOR_WORKER" "$@"; then
    lib_bad "$DOCTOR_NAME: $(grep -c '^READY ' "$W/out") of $n ranks READY"
    sed 's/^/    | /' "$W/out" | tail -40
    return 1
  fi
  DOCTOR_PIDS=$(sed -n 's/^READY .*pid=\([0-9]*\).*/\1/p' "$W/out")
  lib_ok "$DOCTOR_NAME: $n ranks READY ($(echo $DOCTOR_PIDS))"
}

doctor_pid() { faults_field "$W/out" "$1" pid; }
doctor_host() { faults_field "$W/out" "$1" host; }

doctor_status() {
  timeout --signal=KILL 30 "$HVRUN" --status "$@" > "$W/status.txt" 2>&1
  DOCTOR_RC=$?
  echo "# hvrun --status (exit $DOCTOR_RC):"; sed 's/^/    | /' "$W/status.txt" | head -40
}

doctor_analyze() {
  timeout --signal=KILL 30 "$HVRUN" --analyze "$W/dumps" > "$W/analyze.txt" 2>&1
  DOCTOR_RC=$?
  echo "# hvrun --analyze (exit $DOCTOR_RC):"; sed 's/^/    | /' "$W/analyze.txt" | head -40
}

doctor_wait_ranks() {  # doctor_wait_ranks S: until every READY rank has ended (S s at most)
  local p _ alive
  for _ in $(seq $(($1 * 10))); do
    alive=; for p in $DOCTOR_PIDS; do faults_ended "$p" || alive=1; done
    [ -z "$alive" ] && return 0
    sleep 0.1
  done
  return 1
}

doctor_dumps() { find "$W/dumps" -maxdepth 1 -name 'hv-flight.*.rank*.json' 2>/dev/null | wc -l; }

doctor_wait_dumps() {
  local want=$1 limit=$2 _
  for _ in $(seq $((limit * 10))); do
    [ "$(doctor_dumps)" -ge "$want" ] && return 0
    sleep 0.1
  done
  [ "$(doctor_dumps)" -ge "$want" ]
}

doctor_verdict() {
  local file=$1 what=$2 ere=$3 v others
  v=$(sed -n 's/^verdict: //p' "$file")
  # the verdicts come first, the cause first of all; one that blames another rank or
  # another tensor (a consequence taken for the cause) is wrong too
  others=$(printf '%s\n' "$v" | grep -Ev -- "$ere")
  if [ -n "$v" ] && [ -z "$others" ]; then
    lib_ok "$what: $(printf '%s\n' "$v" | head -1)$([ "$(printf '%s\n' "$v" | wc -l)" -gt 1 ] && echo " (and $(($(printf '%s\n' "$v" | wc -l) - 1)) more alike)")"
  else
    lib_bad "$what: every verdict should match /$ere/; in:"; sed 's/^/    | /' "$file" | head -30
  fi
}

doctor_ranks() {  # doctor_ranks 0 2 3 -> 0,2-3
  local out= start= prev= r
  for r in "$@" ""; do
    if [ -n "$prev" ] && [ "$r" = $((prev + 1)) ]; then prev=$r; continue; fi
    if [ -n "$start" ]; then
      [ "$start" = "$prev" ] && out="$out,$start" || out="$out,$start-$prev"
    fi
    start=$r; prev=$r
  done
  echo "${out#,}"
}

doctor_end() {
  local p _
  for p in $DOCTOR_PIDS; do faults_ended "$p" || kill -KILL "$p" 2>/dev/null; done
  if [ -n "${FAULTS_LP:-}" ]; then
    # the launcher (under `timeout`, which passes a TERM on) ends once its ranks are gone
    for _ in $(seq 30); do kill -0 "$FAULTS_LP" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$FAULTS_LP" 2>/dev/null; then
      kill -TERM "$FAULTS_LP"
      for _ in $(seq 50); do kill -0 "$FAULTS_LP" 2>/dev/null || break; sleep 0.1; done
    fi
    kill -0 "$FAULTS_LP" 2>/dev/null && { pkill -KILL -P "$FAULTS_LP"; kill -KILL "$FAULTS_LP"; }
    wait "$FAULTS_LP" 2>/dev/null
    FAULTS_LP=
  fi
  [ "${1:-}" = quiet ] && return 0
  local left=; for p in $DOCTOR_PIDS; do faults_ended "$p" || left="$left $p"; done
  [ -z "$left" ] && lib_ok "$DOCTOR_NAME: no rank left" || lib_bad "$DOCTOR_NAME: ranks left:$left"
}
