#!/bin/bash
# hvrun --analyze on the hand-made dumps of tests/doctor/fixtures/ (one directory per
# verdict of tools/hvrun/FLIGHT_RECORDER.md): each must give its verdict, word for
# word, as the first line, and exit 0; the no-hang job must give no other verdict.
# Usage: analyze_fixtures.sh BUILD_DIR
set -u
B=$(cd "$1" && pwd); H=$(cd "$(dirname "$0")" && pwd)
. "$H/doctor_lib.sh"
F=$H/fixtures
HV=$B/bin/hvrun
hv() { "$HV" "$@"; }

first_verdict() { # NAME DIR LINE: LINE is the first line of the output, and exit 0
  local name=$1 dir=$2 line=$3 out rc
  out=$(timeout --signal=KILL 30 "$B/bin/hvrun" --analyze "$F/$dir" 2>&1); rc=$?
  if [ "$rc" = 0 ] && [ "$(printf '%s\n' "$out" | head -1)" = "$line" ]; then lib_ok "$name"
  else lib_bad "$name: rc $rc, first line should be '$line':"; printf '%s\n' "$out" | sed 's/^/    | /' | head -30; fi
}

first_verdict "a rank that never submitted a name" never_submitted \
  "verdict: rank 3 never submitted 'grad/layer7'; its last submission was 'grad/layer8' 41.9 s ago and it has been in user code since"
first_verdict "the same name submitted differently" mismatch \
  "verdict: ranks 0-1 and ranks 2-3 submitted 'w' differently: allreduce float32 x1024 against allreduce float32 x2048"
first_verdict "GPU (ordered) calls differ at one sequence" gpu_order \
  "verdict: ranks 0-3 issued different GPU collectives at sequence 12: rank 2 called hv_allgather_cuda, the others hv_allreduce_cuda"
first_verdict "a straggler (one rank on a host whose clock is 5 s off)" straggler \
  "verdict: rank 2 is a straggler: it submits each step's first gradient 180 ms (p50) after the median rank"
first_verdict "a dead rank (no dump; the survivors say gone)" dead \
  "verdict: rank 1 died (its process is gone) during 'grad/fc'"
first_verdict "a stopped rank (the survivors say stopped)" stopped \
  "verdict: rank 2 is stopped (process state T: SIGSTOP or a debugger) during 'grad/fc'"
first_verdict "a rank that shut down early" shutdown \
  "verdict: rank 1 shut down (hv_shutdown) while ranks 0,2-3 wait for 'grad/fc'"
first_verdict "a node whose links went down (its dumps missing)" node_down \
  "verdict: ranks 2-3 on host n1 stopped answering (network?) during 'grad/fc': HV_TIMEOUT on ranks 0-1"
first_verdict "a node whose links went down (both sides timed out)" node_down_both \
  "verdict: ranks 2-3 on host n1 stopped answering (network?) during 'grad/fc': HV_TIMEOUT on ranks 0-1"
first_verdict "a node cut off, live, before HV_TIMEOUT (every wait crosses hosts)" node_cut_live \
  "verdict: ranks 2-3 on host n1 stopped answering (network?) during 'grad/fc': ranks 0-1 have waited 2.0 s for them"
first_verdict "a rank stuck in user code on the other node is not a cut" stuck_remote \
  "verdict: rank 3 never submitted 'grad/fc'; its last submission was 'grad/fc' 28.0 s ago and it has been in user code since"
first_verdict "a hang in a sub-communicator names world ranks" subcomm \
  "verdict: rank 3 never submitted 'sub/x'; its last submission was 'sub/y' 24.5 s ago and it has been in user code since"
first_verdict "a skipped name: the rank ahead is blamed, not the ones it blocks" skip_ahead \
  "verdict: rank 1 never submitted 'grad/layer3'; its last submission was 'grad/layer4' 3.0 s ago and it has been negotiating 'grad/layer7' since"
first_verdict "no hang" no_hang "verdict: no hang: every rank completed its last collective"

# one verdict each, and the evidence after the verdicts
for d in never_submitted mismatch gpu_order straggler dead stopped shutdown node_down node_cut_live stuck_remote skip_ahead no_hang; do
  n=$(hv --analyze "$F/$d" 2>&1 | grep -c '^verdict: ')
  [ "$n" = 1 ] && lib_ok "$d: exactly one verdict" || { lib_bad "$d: $n verdicts"; hv --analyze "$F/$d" | grep '^verdict' | sed 's/^/    | /'; }
done
lib_expect "evidence: per rank, and the names some ranks only submitted" 0 \
  "'grad/layer7' \(allreduce\): submitted by ranks 0-2, not by rank 3" "$HV" --analyze "$F/never_submitted"
lib_expect "evidence: the stuck rank in user code, its last completion" 0 \
  "rank 3 \(host vm, pid 4003, dump: signal\): in user code for 41.9 s; last completed 'grad/layer8' allreduce float32 x1024 \(ring\), 41.9 s ago" \
  "$HV" --analyze "$F/never_submitted"
# a single dump file is read as a job of one document
lib_expect "one dump file as the argument" 0 "^verdict: " "$HV" --analyze "$F/no_hang/hv-flight.ompi-4242.rank0.json"
lib_summary
