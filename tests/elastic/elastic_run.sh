#!/bin/bash
# elastic_run.sh BUILD: hvrun --restarts on one machine (issue 21), each case a real
# mpirun job of elastic_worker (tests/elastic/elastic_worker.c) through hvrun:
#   kill        a rank SIGKILLs itself mid-job: hvrun names it, relaunches once, the job
#               resumes after its last finished step and ends with every step done once
#   twice       killed on the first attempt and again at the first step of the restart
#               (a failure during recovery): two restarts, the job completes
#   exhausted   killed on every attempt: "restarts exhausted", non-zero exit, 2 attempts
#   unmarked    a program that never said it resumes (restart_mark.h): relaunched, and
#               hvrun warns that it starts over
#   program     a rank exits with code 4 (its own error): not restarted, exit non-zero
#   options     --restarts without -np, --min-np above -np, under a launcher: usage errors
# Judged by exit codes and by the lines hvrun and the worker print; also the time from
# the kill to the relaunched job's first step (the figure for the note).
set -u
build=$1
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"
hvrun=$build/bin/hvrun
worker=$build/tests/elastic/elastic_worker
[ -x "$worker" ] || worker=$(find "$build" -name elastic_worker -type f -perm -u+x | head -1)
export HV_TIMEOUT=${HV_TIMEOUT:-10}
tmp=$(mktemp -d /tmp/hv-elastic.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# run NAME RC CMD...: runs CMD (bounded), checks its exit code; its output stays in $out
# for the pattern checks that follow (has NAME REGEX: a line matches).
run() {
  local name=$1 want=$2 t0; shift 2
  t0=$(date +%s%N)
  out=$(timeout --signal=KILL 150 "$@" 2>&1); rc=$?
  case_name=$name
  if [ "$rc" = "$want" ]; then lib_ok "$name: exit $rc ($(lib_ms "$t0") ms)"
  else lib_bad "$name: exit $rc, want $want"; printf '%s\n' "$out" | grep -v '^\[.*\] \[' | sed 's/^/    | /' | tail -40; fi
}
has() {
  if printf '%s\n' "$out" | grep -Eq -- "$1"; then lib_ok "$case_name: /$1/"
  else lib_bad "$case_name: no line matches /$1/"; printf '%s\n' "$out" | grep -v '^\[.*\] \[' | sed 's/^/    | /' | tail -40; fi
}
count() { # count REGEX N: exactly N lines match
  local n; n=$(printf '%s\n' "$out" | grep -Ec -- "$1")
  [ "$n" = "$2" ] && lib_ok "$case_name: $2 x /$1/" || lib_bad "$case_name: $n lines match /$1/, want $2"
}

run kill 0 "$hvrun" --restarts 1 -np 3 "$worker" --steps 30 --state "$tmp/kill" --kill-rank 1 --kill-step 12
has "^hvrun: restart 1 of 1: lost rank 1 on host [^ ]+ \(killed by signal 9\); relaunching 3 ranks on [^ ]+ \(HV_RESTART=1\)$"
has "^RESUMED step=1[23] restart=1 size=3$"
has "^DONE steps=30 restart=1 size=3$"
has "^hvrun: the job finished after 1 restart$"
count "did not say that it resumes" 0
[ "$(grep -c . "$tmp/kill")" = 30 ] && lib_ok "kill: the state file holds 30 steps" || lib_bad "kill: state file: $(grep -c . "$tmp/kill") lines"

run twice 0 "$hvrun" --restarts 2 -np 3 "$worker" --steps 20 --state "$tmp/twice" --kill-rank 2 --kill-step 8 --recovery-kill-rank 0
has "^hvrun: restart 1 of 2: lost rank 2 on host [^ ]+ \(killed by signal 9\)"
has "^hvrun: restart 2 of 2: lost rank 0 on host [^ ]+ \(killed by signal 9\)"
has "^DONE steps=20 restart=2 size=3$"

run exhausted 137 "$hvrun" --restarts 1 -np 2 "$worker" --steps 20 --state "$tmp/exhausted" --kill-rank 0 --kill-step 15 --on-attempts 0,1
has "^hvrun: restart 1 of 1: lost rank 0 on host [^ ]+ \(killed by signal 9\)"
has "^hvrun: restarts exhausted \(1 of 1\): rank 0 on host [^ ]+ \(killed by signal 9\)$"
count "^RESUMED " 1

run unmarked 0 "$hvrun" --restarts 1 -np 2 "$worker" --steps 20 --state "$tmp/unmarked" --kill-rank 1 --kill-step 5 --no-mark
has "^hvrun: warning: [^ ]*elastic_worker did not say that it resumes .*starts over and the work so far is lost$"
count "^hvrun: warning: .*did not say that it resumes" 1

run program 4 "$hvrun" --restarts 3 -np 2 "$worker" --steps 20 --state "$tmp/program" --exit-rank 1 --exit-step 3
has "^hvrun: not restarting: rank 1 exited with code 4, and no rank or node was lost"
count "^hvrun: restart " 0

lib_expect "options: --restarts needs -np" 2 "needs -np N" "$hvrun" --restarts 1 "$worker" --state "$tmp/x"
lib_expect "options: --min-np above -np" 2 "--min-np 5 is more than -np 2" \
  "$hvrun" --restarts 1 --min-np 5 -np 2 "$worker" --state "$tmp/x"
lib_expect "options: --min-np alone" 2 "--min-np goes with --restarts" "$hvrun" --min-np 1 -np 2 "$worker" --state "$tmp/x"
lib_expect "options: bad count" 2 "--restarts needs a whole number" "$hvrun" --restarts x -np 2 "$worker"
lib_summary
