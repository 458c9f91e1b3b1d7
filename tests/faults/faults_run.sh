#!/bin/bash
# faults_run.sh MODE VICTIM N CMD...: one fault, injected from outside, into a launch
# of faults_worker with N ranks (CMD: the launcher's command line ending with the
# worker), and what every rank must say about it (issue 11):
#   kill       SIGKILL rank VICTIM once all ranks are READY. Every other rank logs
#              "[hv rank R] error: the engine stopped: rank VICTIM on host H (pid P) is
#              gone: ...; pending tensors (K): '...'", the launch ends non-zero, the last
#              rank within HV_TIMEOUT of the kill (the figure: seconds from the kill to
#              the last rank's exit), no rank and no /dev/shm/hv-* is left.
#   stop       SIGSTOP rank VICTIM. Every other rank warns past HV_STALL_CHECK_TIME
#              that rank VICTIM is stopped, with the tensors held up, and stops past
#              HV_STALL_SHUTDOWN_TIME; the launch ends (the stopped rank included).
#   mismatch   rank VICTIM submits a count that differs: every rank fails with the
#              same message naming rank VICTIM, and nothing else (no shut-down,
#              timeout or stall noise).
#   bad-input  rank VICTIM's call is refused (AVERAGE of int32) and it shuts down:
#              every other rank logs that rank VICTIM shut down after that error.
# Env: HV_TIMEOUT, HV_STALL_CHECK_TIME, HV_STALL_SHUTDOWN_TIME (passed to the ranks),
# FAULTS_TIMEOUT (outer bound of the launch, s), FAULTS_LABEL (the launcher, for the
# figure). Prints ok/FAIL lines; exit 0 when all pass.
set -u
H=$(cd "$(dirname "$0")" && pwd)
. "$H/../launch/launch_lib.sh"
. "$H/faults_lib.sh"
mode=$1 victim=$2 n=$3; shift 3
case $mode in
  mismatch) set -- "$@" --mismatch "$victim" ;;
  bad-input) set -- "$@" --bad-input "$victim" ;;
  kill|stop) ;;
  *) echo "usage: faults_run.sh kill|stop|mismatch|bad-input VICTIM N CMD..." >&2; exit 2 ;;
esac
label=${FAULTS_LABEL:-$1}
out=$(mktemp /tmp/hv-faults.XXXXXX)
shm_before=$(faults_hv_shm)
show() { grep -v '^\[.*\] \[ *[0-9]*\] ' "$out" | sed 's/^/    | /' | tail -60; }

if ! faults_start "$out" "$n" "$@"; then
  # Everything, backtraces included: a rank that died before READY is the story here.
  lib_bad "$mode/$label: $(grep -c '^READY ' "$out") of $n ranks READY"; sed 's/^/    | /' "$out" | tail -80
  rm -f "$out"; lib_summary; exit
fi
vpid=$(faults_field "$out" "$victim" pid); vhost=$(faults_field "$out" "$victim" host)
t0=$(date +%s%N)
case $mode in
  kill) kill -KILL "$vpid" ;;
  stop) kill -STOP "$vpid" ;;
esac
faults_wait_end "$out" "$t0"
: "${FAULTS_LAUNCHER_MS:=$((FAULTS_TIMEOUT * 1000))}"
echo "# $mode rank $victim (pid $vpid, host $vhost) under $label: launcher exit $FAULTS_RC after" \
     "$(faults_sec "$FAULTS_LAUNCHER_MS") s, last rank gone after $(faults_sec "$FAULTS_LAST_MS") s"

grep -E '^\[hv rank [0-9]+\] (error|warning)' "$out" | sort -t' ' -k3n -s | sed 's/^/    /'
survivors=$(seq 0 $((n - 1)) | grep -vx "$victim")
missing=
# The survivors without the line "[hv rank R] error: ERE" in the output.
survivors_without() {
  local r m=
  for r in $survivors; do grep -Eq "^\[hv rank $r\] error: $1" "$out" || m="$m $r"; done
  printf '%s' "$m"
}
case $mode in
  kill)
    missing=$(survivors_without "the engine stopped: rank $victim on host $vhost \(pid $vpid\) is gone: .*; pending tensors \([1-9][0-9]*\): 'grad/layer")
    [ -z "$missing" ] && lib_ok "kill -9 rank $victim under $label: every other rank named rank $victim, host $vhost, pid $vpid and its pending tensors" ||
      { lib_bad "kill -9 rank $victim under $label: ranks$missing did not name it"; show; }
    bound=${HV_TIMEOUT:-60}
    [ "$FAULTS_LAST_MS" -le $((bound * 1000)) ] &&
      lib_ok "last rank exited $(faults_sec "$FAULTS_LAST_MS") s after the kill (bound: HV_TIMEOUT=$bound s)" ||
      lib_bad "last rank exited $(faults_sec "$FAULTS_LAST_MS") s after the kill: more than HV_TIMEOUT=$bound s"
    echo "# figure: kill -9 -> last rank exit $(faults_sec "$FAULTS_LAST_MS") s ($label)"
    ;;
  stop)
    shut=${HV_STALL_SHUTDOWN_TIME:-0}
    stopped="rank $victim on host $vhost \(pid $vpid\) is stopped \(SIGSTOP or a debugger\)"
    for r in $survivors; do
      # the error: found here ("rank R waited N s for ...: <stopped>; HV_STALL_SHUTDOWN_TIME=S
      # s passed") or from the first rank that found it ("rank Q on host H waited longer
      # than HV_STALL_SHUTDOWN_TIME=S s for its peers: <stopped> (...)")
      line=$(grep "^\[hv rank $r\] error: the engine stopped: " "$out")
      grep -Eq "^\[hv rank $r\] warning: stall: rank $r has waited [0-9]+ s for .*: $stopped; tensors held up here \([1-9][0-9]*\): 'grad/layer" "$out" &&
        printf '%s' "$line" | grep -Eq "$stopped" && printf '%s' "$line" | grep -q "HV_STALL_SHUTDOWN_TIME=$shut s" &&
        printf '%s' "$line" | grep -Eq "; pending tensors \([1-9][0-9]*\): 'grad/layer" || missing="$missing $r"
    done
    [ -z "$missing" ] && lib_ok "SIGSTOP rank $victim under $label: every other rank's stall warning named it stopped, with the tensors held up, then HV_STALL_SHUTDOWN_TIME=$shut s stopped them" ||
      { lib_bad "SIGSTOP rank $victim under $label: ranks$missing did not warn and stop naming it"; show; }
    [ "$FAULTS_LAST_MS" -ge $((shut * 1000)) ] && [ "$FAULTS_LAST_MS" -le $((shut * 1000 + 5000)) ] &&
      lib_ok "the job ended $(faults_sec "$FAULTS_LAST_MS") s after the stop (HV_STALL_SHUTDOWN_TIME=$shut s)" ||
      lib_bad "the job ended $(faults_sec "$FAULTS_LAST_MS") s after the stop: expected $shut to $((shut + 5)) s"
    ;;
  mismatch)
    msg="tensor 'grad/layer2' \(allreduce\) was submitted with different count on different ranks: rank 0 has 65536, rank $victim has 65535"
    for r in $(seq 0 $((n - 1))); do grep -Eq "^FAILED rank=$r .*: $msg$" "$out" || missing="$missing $r"; done
    [ -z "$missing" ] && lib_ok "mismatch on rank $victim under $label: all $n ranks report the same first error naming rank $victim" ||
      { lib_bad "mismatch on rank $victim under $label: ranks$missing did not report it"; show; }
    ;;
  bad-input)
    msg="rank $victim, tensor 'grad/layer2': HV_AVERAGE needs a float dtype"
    grep -Eq "^FAILED rank=$victim .*: $msg" "$out" || missing=" $victim"
    missing="$missing$(survivors_without "rank $victim on host $vhost shut down the communicator after its error: $msg.*; pending tensors \([1-9]")"
    [ -z "$missing" ] && lib_ok "bad input on rank $victim under $label: it reports its error, every other rank reports that same error naming rank $victim" ||
      { lib_bad "bad input on rank $victim under $label: ranks$missing did not report rank $victim's error"; show; }
    ;;
esac
case $mode in
  mismatch|bad-input)
    noise=$(grep -E "HV_TIMEOUT|is gone|stall|hv_shutdown was called|unexpectedly disconnected" "$out" || true)
    [ -z "$noise" ] && lib_ok "no secondary error (timeout, lost peer, stall, bare shut down)" ||
      { lib_bad "secondary errors:"; printf '%s\n' "$noise" | sed 's/^/    | /' | head -10; }
    [ "$FAULTS_LAST_MS" -le 20000 ] || lib_bad "the job took $(faults_sec "$FAULTS_LAST_MS") s to end"
    ;;
esac
[ "$FAULTS_RC" != 0 ] && [ "$FAULTS_LAUNCHER_MS" -lt $((FAULTS_TIMEOUT * 1000)) ] &&
  lib_ok "the launch ended by itself with exit code $FAULTS_RC" ||
  lib_bad "the launch exited $FAULTS_RC after $(faults_sec "$FAULTS_LAUNCHER_MS") s (0, or killed by the outer timeout)"
[ -z "$FAULTS_LEFT" ] && lib_ok "no rank left running" ||
  { lib_bad "ranks left running 5 s after the launcher ended:$FAULTS_LEFT"; for p in $FAULTS_LEFT; do kill -KILL "$p" 2>/dev/null; done; }
# under the sanitizer builds: the ranks' exit codes are non-zero anyway, so look for
# their reports
san=$(grep -E "(ERROR|WARNING): (Address|Leak|Thread|UndefinedBehavior)Sanitizer|runtime error:" "$out" | head -5 || true)
[ -z "$san" ] || { lib_bad "sanitizer reports:"; printf '%s\n' "$san" | sed 's/^/    | /'; }
shm_new=$(comm -13 <(printf '%s\n' "$shm_before" | sort) <(faults_hv_shm | sort) | grep . || true)
[ -z "$shm_new" ] && lib_ok "no /dev/shm/hv-* left" || lib_bad "left in /dev/shm: $shm_new"
rm -f "$out"
lib_summary
