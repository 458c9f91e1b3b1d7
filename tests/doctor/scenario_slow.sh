#!/bin/bash
# scenario_slow.sh LAUNCHER...: a slow rank (issue 22). doctor_worker runs with rank 3
# pausing 30 ms more than the others before each step's first submission (the
# analyzer calls a lag a straggler's from 20 ms: tools/hvrun/doctor_verdict_straggler.c).
#  - the straggler report (hv_straggler_report every 20 steps) names rank 3 with a
#    lag of 15-60 ms, every time;
#  - `hvrun --status` while it runs, and `hvrun --analyze` on the dumps written at exit
#    (HV_FLIGHT_RECORDER), say
#    verdict: rank 3 is a straggler: it submits each step's first gradient X ms (p50) after the median rank
#    with X within 15-60 ms;
#  - the run is not a failure: every rank exits 0 with exact sums.
# Env: HVRUN, DOCTOR_WORKER. Prints ok/FAIL lines; exit 0 when all pass.
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"; . "$H/../faults/faults_lib.sh"; . "$H/scenario_lib.sh"
N=4 V=3 D=30 LO=15 HI=60
LAUNCH=("$@")
doctor_setup slow
doctor_launch $N run --victim $V --delay-ms $D --report-every 20 --seconds 120 --stop-file "$W/stop" ||
  { lib_summary; exit; }
for _ in $(seq 300); do [ "$(grep -c '^STRAGGLER ' "$W/out")" -ge 2 ] && break; sleep 0.1; done
in_bounds() { awk -v x="${1:-x}" -v lo=$LO -v hi=$HI 'BEGIN { exit !(x ~ /^[0-9.]+$/ && x >= lo && x <= hi) }'; }
want="^rank $V is a straggler: it submits each step's first gradient [0-9.]+ ms \(p50\) after the median rank"
doctor_status
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"
doctor_verdict "$W/status.txt" "status while it runs" "$want"
touch "$W/stop"
faults_wait_end "$W/out" "$(date +%s%N)"
sums=$(sed -n 's/^DONE rank=[0-9]* steps=\([0-9]*\) checksum=\([0-9a-f]*\)$/\1 \2/p' "$W/out" | sort -u)
[ "$FAULTS_RC" = 0 ] && [ "$(grep -c '^DONE rank=' "$W/out")" = $N ] && [ "$(printf '%s\n' "$sums" | grep -c .)" = 1 ] &&
  lib_ok "every rank finished, sums exact, the same steps and results everywhere ($sums; exit 0)" ||
  lib_bad "launcher exit $FAULTS_RC, $(grep -c '^DONE rank=' "$W/out") of $N ranks DONE, steps and checksums: $(echo $sums)"
bad=; n=0
while read -r line; do
  n=$((n + 1))
  r=$(sed -n 's/.* rank=\([-0-9]*\) .*/\1/p' <<< "$line"); lag=$(sed -n 's/.* lag_ms=\([-0-9.]*\) .*/\1/p' <<< "$line")
  { [ "$r" = $V ] && in_bounds "$lag"; } || bad="$bad [$line]"
done < <(grep '^STRAGGLER ' "$W/out")
[ $n -ge 2 ] && [ -z "$bad" ] && lib_ok "the $n straggler reports name rank $V, lag $LO-$HI ms: $(grep '^STRAGGLER ' "$W/out" | head -2 | tr '\n' ' ')" ||
  lib_bad "straggler reports ($n):$bad"
doctor_wait_dumps $N 10 && lib_ok "$N dumps at exit" || lib_bad "$(doctor_dumps) of $N dumps at exit"
doctor_analyze
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"
doctor_verdict "$W/analyze.txt" "analyze" "$want"
for f in status analyze; do
  x=$(sed -n "s/^verdict: rank $V is a straggler: .* gradient \([0-9.]*\) ms (p50).*/\1/p" "$W/$f.txt" | head -1)
  in_bounds "$x" && lib_ok "$f: lag $x ms within $LO-$HI ms (injected: $D ms)" || lib_bad "$f: lag '${x:-?}' ms, expected $LO-$HI"
done
doctor_end
lib_summary
