#!/bin/bash
# hvrun --status against stand-ins of the ranks' status servers
# (fixtures/fake_status_rank.py serving the hand-made documents of fixtures/): the live
# verdicts, and every case where a rank cannot answer or must not be asked: a stopped
# rank (SIGSTOP: /proc says T), a dead one (stale socket), one that shut down (socket
# removed), no job / a job id that does not exist / several jobs, a job directory or a
# socket of another user (root only: chown to nobody), a rank answering garbage.
# Usage: analyze_status_sockets.sh BUILD_DIR
set -u
B=$(cd "$1" && pwd); H=$(cd "$(dirname "$0")" && pwd)
. "$H/doctor_lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
HV=$B/bin/hvrun
F=$H/fixtures
W=$(mktemp -d /tmp/hv-doctor-status.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
export HV_STATUS_DIR=$W/status
mkdir -m 700 "$HV_STATUS_DIR"
J=$HV_STATUS_DIR/ompi-4242
start_rank() { # JOBDIR W DOC: starts a stand-in, waits for its pid file
  python3 "$F/fake_status_rank.py" "$1" "$2" "$3" & PIDS+=($!)
  for _ in $(seq 100); do [ -s "$1/rank$2.pid" ] && [ -S "$1/rank$2.sock" ] && return 0; sleep 0.05; done
  lib_bad "the stand-in of rank $2 did not start"; return 1
}
pid_of() { cat "$J/rank$1.pid"; }
for w in 0 1 2 3; do start_rank "$J" $w "$F/never_submitted/hv-flight.ompi-4242.rank$w.json"; done

expect_line "--status: the one job running, a rank that never submitted" 0 \
  "verdict: rank 3 never submitted 'grad/layer7'; its last submission was 'grad/layer8' 41.9 s ago and it has been in user code since" \
  "$HV" --status
lib_expect "--status: one line per rank" 0 "rank 0 \(host vm, pid 4000\): negotiating for 41.9 s; pending \(1\): 'grad/layer7' allreduce 41.9 s" \
  "$HV" --status --job ompi-4242
lib_expect "--status: the names some ranks only submitted" 0 "'grad/layer7' \(allreduce\): submitted by ranks 0-2, not by rank 3" \
  "$HV" --status --job ompi-4242
n=$("$HV" --status --job ompi-4242 --raw | python3 -c '
import json, sys
print(sorted(json.loads(l)["world_rank"] for l in sys.stdin))')
[ "$n" = "[0, 1, 2, 3]" ] && lib_ok "--status --raw: one JSON document per line, ranks $n" || lib_bad "--status --raw gave ranks '$n'"

kill -STOP "$(pid_of 3)"
t0=$(date +%s%N)
expect_line "a stopped rank (SIGSTOP): /proc says T" 0 \
  "verdict: rank 3 is stopped (process state T: SIGSTOP or a debugger) during 'grad/layer7'" "$HV" --status
ms=$(lib_ms "$t0")
[ "$ms" -lt 15000 ] && lib_ok "... answered within the timeout ($ms ms; one wait for all ranks)" || lib_bad "--status took $ms ms"
lib_expect "... its line says why" 0 "^rank 3: stopped: process state T \(pid [0-9]+\): SIGSTOP or a debugger; no answer in 2 s" \
  "$HV" --status
{ kill -CONT "$(pid_of 3)"; kill -KILL "$(pid_of 3)"; wait "$(pid_of 3)"; } 2>/dev/null
expect_line "a dead rank (its socket is stale)" 0 "verdict: rank 3 died (its process is gone) during 'grad/layer7'" "$HV" --status
lib_expect "... its line says why" 0 "^rank 3: gone: its process is gone \(pid no longer exists; stale socket: Connection refused\)" "$HV" --status
rm -f "$J/rank3.sock"
expect_line "a rank that shut down (its socket removed)" 0 \
  "verdict: rank 3 shut down (hv_shutdown) while ranks 0-2 wait for 'grad/layer7'" "$HV" --status

echo "# which job"
lib_expect "--job that does not exist" 1 "^hvrun: error: no job 'ompi-9' in $HV_STATUS_DIR \(jobs there: ompi-4242\)$" \
  "$HV" --status --job ompi-9
lib_expect "--job that is not a job id" 2 "--job '\.\./x': not a job id" "$HV" --status --job ../x
J2=$HV_STATUS_DIR/ompi-77
start_rank "$J2" 0 "$F/no_hang/hv-flight.ompi-4242.rank0.json"
lib_expect "two jobs running: the candidates, exit 1" 1 "2 running hv jobs in .*pick one with --job ID" "$HV" --status
lib_expect "... --job picks one" 0 "^verdict: " "$HV" --status --job ompi-77
lib_expect "no status directory" 1 "no hv job is running as you on this machine: $W/none does not exist" \
  env HV_STATUS_DIR="$W/none" "$HV" --status
mkdir -m 700 "$W/empty"
lib_expect "a status directory without running jobs" 1 "no running hv job found in $W/empty" \
  env HV_STATUS_DIR="$W/empty" "$HV" --status
J3=$HV_STATUS_DIR/garbage
printf 'not json' > "$W/garbage.json"
start_rank "$J3" 0 "$W/garbage.json"
lib_expect "a rank answering garbage" 1 "the answer of $J3/rank0.sock is not a valid JSON document" "$HV" --status --job garbage

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
  chown nobody "$J"
  lib_expect "a job directory of another user" 1 "the job directory $J belongs to nobody \(uid [0-9]+\), not to you \(root \(uid 0\)\): refusing" \
    "$HV" --status --job ompi-4242
  chown root "$J"; chown nobody "$J/rank1.sock"
  lib_expect "a socket of another user" 1 "$J/rank1.sock belongs to nobody \(uid [0-9]+\), not to you .*refusing to talk to it" \
    "$HV" --status --job ompi-4242
  chown root "$J/rank1.sock"; chown nobody "$HV_STATUS_DIR"
  lib_expect "a status directory of another user" 1 "the status directory $HV_STATUS_DIR belongs to nobody" "$HV" --status
  chown root "$HV_STATUS_DIR"
else
  echo "# not root: the other-user cases are skipped"
fi
lib_summary
