#!/bin/bash
# faults_threads.sh MODE VICTIM N REPEATS CMD...: faults injected into launches of
# faults_threads (several threads, hundreds of requests in flight; CMD: the launcher's
# command line ending with the program), REPEATS times, since the races this guards
# against (issue 27) showed in one try of four to six:
#   stop    SIGSTOP rank VICTIM once all ranks are READY: every other rank warns past
#           HV_STALL_CHECK_TIME and stops past HV_STALL_SHUTDOWN_TIME, each with its
#           line ("... stopped ...; pending tensors (K): ...").
#   resume  SIGSTOP rank VICTIM, SIGCONT it RESUME_AFTER (3) s later, before
#           HV_STALL_SHUTDOWN_TIME: the stall warnings come, and then every rank
#           completes its passes (DONE, exit 0; give the program --until S, S past
#           the resume).
#   kill    SIGKILL rank VICTIM: every other rank logs "rank VICTIM ... is gone".
# In every mode, every tensor name a rank prints in a stall or error line must be
# one that faults_threads submits ('t<thread>/p<pass>/<ar|ag|bc><i>' or '.../go', thread <
# FT_THREADS (3), i < FT_PER_PASS (60)): a name read from a request its thread has
# already released shows up as '', raw bytes, or a crash of the rank (which the
# launcher reports, and which leaves that rank's line missing). Sanitizer reports fail
# the run too. Exit 0 when every repeat passes. FT_KEEP=PREFIX keeps the output of a
# failed try as PREFIX.TRY.
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"
. "$H/faults_lib.sh"
mode=$1 victim=$2 n=$3 repeats=$4; shift 4
case $mode in stop|resume|kill) ;; *) echo "usage: faults_threads.sh stop|resume|kill VICTIM N REPEATS CMD..." >&2; exit 2 ;; esac
threads=${FT_THREADS:-3} per_pass=${FT_PER_PASS:-60} resume_after=${RESUME_AFTER:-3}
out=$(mktemp /tmp/hv-faults-threads.XXXXXX)
survivors=$(seq 0 $((n - 1)) | grep -vx "$victim")
show() { grep -v '^\[.*\] \[ *[0-9]*\] ' "$out" | sed 's/^/    | /' | cut -c1-400 | tail -40; }

# Every quoted name of the stall and error lines of hv (printed 'name', comma
# separated, possibly ending in ", ..."), one per line, that is not a name
# faults_threads submits.
bad_names() {
  grep -E '^\[hv rank [0-9]+\] (warning: stall|error: )' "$out" |
    sed -n "s/.*\(tensors held up here\|pending tensors\) ([0-9]*): //p" |
    sed 's/, \.\.\.$//' |
    awk -v T="$threads" -v P="$per_pass" '{
      # split on the separator between quoted names
      n = split($0, f, "\x27, \x27")
      for (i = 1; i <= n; i++) {
        s = f[i]; if (i == 1) sub(/^\x27/, "", s); if (i == n) sub(/\x27$/, "", s)
        if (s == "none" && n == 1) continue
        if (match(s, /^t[0-9]+\/p[0-9]+\/go$/)) { split(s, a, "/"); if (substr(a[1], 2) + 0 < T) continue }
        if (match(s, /^t[0-9]+\/p[0-9]+\/(ar|ag|bc)[0-9]+$/)) {
          split(s, a, "/"); t = substr(a[1], 2) + 0; k = a[3]; sub(/^(ar|ag|bc)/, "", k)
          if (t < T && k + 0 < P) continue
        }
        printf "[%s]\n", s
      }
    }'
}

for try in $(seq "$repeats"); do
  label="$mode rank $victim, try $try of $repeats"
  if ! faults_start "$out" "$n" "$@"; then
    lib_bad "$label: $(grep -c '^READY ' "$out") of $n ranks READY"; sed 's/^/    | /' "$out" | tail -60
    continue
  fi
  # (anywhere in a line: another rank's output may share it)
  ready=$(grep -ao "READY rank=$victim size=[0-9]* pid=[0-9]* host=[^ ]*" "$out" | head -1)
  vpid=$(printf '%s' "$ready" | sed -n 's/.* pid=\([0-9]*\) .*/\1/p'); vhost=${ready##* host=}
  if [ -z "$vpid" ]; then
    lib_bad "$label: no READY line of rank $victim"; grep -a READY "$out" | sed 's/^/    | /'
    [ -z "${FT_KEEP:-}" ] || cp "$out" "$FT_KEEP.$try"
    faults_wait_end "$out" "$(date +%s%N)"; continue
  fi
  t0=$(date +%s%N)
  case $mode in
    kill) kill -KILL "$vpid" ;;
    stop) kill -STOP "$vpid" ;;
    resume) kill -STOP "$vpid"; sleep "$resume_after"; kill -CONT "$vpid" ;;
  esac
  faults_wait_end "$out" "$t0"
  [ "$mode" = stop ] && kill -CONT "$vpid" 2>/dev/null
  fails=0
  fail() { lib_bad "$label: $*"; fails=1; }
  missing=
  case $mode in
    kill|stop)
      if [ "$mode" = kill ]; then
        what="rank $victim on host $vhost \(pid $vpid\) is gone"
      else
        what="rank $victim on host $vhost \(pid $vpid\) is stopped"
      fi
      for r in $survivors; do
        grep -Eq "^\[hv rank $r\] error: the engine stopped: .*$what.*; pending tensors \([0-9]+\): " "$out" ||
          missing="$missing $r"
      done
      [ -z "$missing" ] || fail "ranks$missing did not print their line naming rank $victim"
      [ "$FAULTS_RC" != 0 ] || fail "the launch exited 0"
      ;;
    resume)
      grep -q "warning: stall: .*rank $victim on host $vhost (pid $vpid) is stopped" "$out" ||
        fail "no stall warning named the stopped rank $victim"
      for r in $(seq 0 $((n - 1))); do grep -q "^DONE rank=$r$" "$out" || missing="$missing $r"; done
      [ -z "$missing" ] || fail "ranks$missing did not complete after rank $victim was resumed"
      [ "$FAULTS_RC" = 0 ] || fail "the launch exited $FAULTS_RC"
      ;;
  esac
  bad=$(bad_names | sort -u | head -5)
  [ -z "$bad" ] || fail "names printed that were never submitted (released requests read): $(echo $bad)"
  died=$(grep -E "exited on signal|Segmentation fault|signal 11|SIGSEGV|SIGABRT" "$out" | grep -v "rank $victim " | head -3)
  [ "$mode" = kill ] && died=$(printf '%s\n' "$died" | grep -v "process rank $victim with PID" | grep . || true)
  [ -z "$died" ] || fail "a surviving rank died: $died"
  crash=$(grep -ao "CRASH rank=[0-9]* signal=[0-9]* addr=0x[0-9a-f]*" "$out" | head -3)
  [ -z "$crash" ] || fail "a rank crashed: $(echo $crash)"
  grep -Eq "^WRONG " "$out" && fail "wrong results: $(grep -m1 '^WRONG ' "$out")"
  san=$(grep -E "(ERROR|WARNING): (Address|Leak|Thread|UndefinedBehavior)Sanitizer|runtime error:" "$out" | head -3)
  [ -z "$san" ] || fail "sanitizer reports: $san"
  [ -z "$FAULTS_LEFT" ] || { fail "ranks left running:$FAULTS_LEFT"; for p in $FAULTS_LEFT; do kill -KILL "$p" 2>/dev/null; done; }
  if [ $fails = 0 ]; then
    lib_ok "$label: every surviving rank printed its line, all names valid (launch exit $FAULTS_RC, $(faults_sec "$FAULTS_LAST_MS") s)"
  else
    show
    [ -z "${FT_KEEP:-}" ] || cp "$out" "$FT_KEEP.$try"
  fi
done
rm -f "$out"
lib_summary
