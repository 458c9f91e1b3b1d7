# faults_lib.sh: helpers of the fault-injection tests (sourced after
# tests/launch/launch_lib.sh, whose lib_ok / lib_bad / lib_summary they use).
#   faults_start OUT N CMD...   start CMD (a launch of faults_worker with N ranks) in the
#                               background under `timeout`, output to OUT; wait for the
#                               N "READY rank=R ... pid=P host=H" lines (or the end)
#   faults_field OUT RANK KEY   pid or host of RANK from its READY line
#   faults_wait_end OUT T0      wait for the launcher and for every rank to end; sets
#                               FAULTS_RC (launcher's exit code), FAULTS_LAUNCHER_MS and
#                               FAULTS_LAST_MS (from T0, date +%s%N, to the launcher's /
#                               the last rank's end) and FAULTS_LEFT (ranks still alive)
#   faults_hv_shm               the /dev/shm/hv-* entries (hv's regions)
# A rank has ended when its pid is gone or a zombie: the launcher may exit before it
# reaps its tasks, and then init reaps them when it gets to it.
# shellcheck shell=bash disable=SC2034  # (sourced: the FAULTS_* results are the callers')
FAULTS_TIMEOUT=${FAULTS_TIMEOUT:-90}

faults_ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
faults_sec() { printf '%d.%02d' $(($1 / 1000)) $(($1 % 1000 / 10)); }

faults_start() {
  local out=$1 n=$2; shift 2
  timeout --signal=KILL "$FAULTS_TIMEOUT" "$@" > "$out" 2>&1 &
  FAULTS_LP=$!
  local _; for _ in $(seq 600); do
    [ "$(grep -c '^READY ' "$out")" -ge "$n" ] && return 0
    kill -0 "$FAULTS_LP" 2>/dev/null || break
    sleep 0.1
  done
  [ "$(grep -c '^READY ' "$out")" -ge "$n" ]
}

faults_field() { sed -n "s/^READY rank=$2 .*$3=\([^ ]*\).*/\1/p" "$1" | head -1; }

faults_ended() {  # faults_ended PID: gone, or a zombie
  local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [ -z "$st" ] || [ "$st" = Z ]
}

faults_wait_end() {
  local out=$1 t0=$2 pids p alive launcher_done=0 _
  pids=$(sed -n 's/^READY .*pid=\([0-9]*\).*/\1/p' "$out")
  FAULTS_LAUNCHER_MS=; FAULTS_LAST_MS=
  # poll every 10 ms: the figures are kill-to-exit times of a fraction of a second
  for _ in $(seq $((FAULTS_TIMEOUT * 100 + 500))); do
    if [ $launcher_done = 0 ] && ! kill -0 "$FAULTS_LP" 2>/dev/null; then
      launcher_done=1; FAULTS_LAUNCHER_MS=$(faults_ms "$t0")
    fi
    alive=; for p in $pids; do faults_ended "$p" || alive="$alive $p"; done
    [ -z "$alive" ] && [ -z "$FAULTS_LAST_MS" ] && FAULTS_LAST_MS=$(faults_ms "$t0")
    # after the launcher, ranks get 5 s to go before they count as left behind
    [ -z "$alive" ] && [ $launcher_done = 1 ] && break
    [ $launcher_done = 1 ] && [ $(( $(faults_ms "$t0") - FAULTS_LAUNCHER_MS )) -gt 5000 ] && break
    sleep 0.01
  done
  wait "$FAULTS_LP"; FAULTS_RC=$?
  FAULTS_LEFT=$alive
  [ -n "$FAULTS_LAST_MS" ] || FAULTS_LAST_MS=$(faults_ms "$t0")
}

faults_hv_shm() { local f; for f in /dev/shm/hv-*; do [ -e "$f" ] && echo "${f#/dev/shm/}"; done; return 0; }
