#!/bin/bash
# elastic_netns.sh BUILD: hvrun --restarts on an emulated 2-node cluster (network
# namespaces, tests/cluster/), the supervisor on node 0 as on a batch host:
#   kill        rank 1 (node 1) SIGKILLs itself: both nodes stay, the job is relaunched
#               on 2 ranks and completes; the figure: seconds from the kill to the
#               relaunched job's first step (goal: at most 10)
#   node_loss   node 1's link is cut mid-job: the ranks give up within HV_TIMEOUT, hvrun
#               finds node 1 unreachable (a 1-rank probe there cannot reach it), and
#               relaunches on node 0 alone (--min-np 1), which completes
#   min_np      the same loss with --min-np 2: hvrun stops, naming the ranks left
# Judged by exit codes, hvrun's lines and the worker's state file (every step once).
# Exit 77 (skipped) without root or network namespaces.
set -u
B=$(cd "$1" && pwd)
H=$(cd "$(dirname "$0")" && pwd); C=$(cd "$H/../cluster" && pwd)
. "$H/../launch/launch_lib.sh"
lib_need_root_tools ip nsenter unshare
ip netns add hvprobe$$ 2>/dev/null && ip netns del hvprobe$$ || { echo "SKIP: cannot create network namespaces"; exit 77; }
for v in $(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\)_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export HV_NS=elx HV_NS_NET=10.83.0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=$(mktemp -d /tmp/hv-elastic-netns.XXXXXX)
trap 'rm -rf "$W"' EXIT
# The teardown is armed only once our nodes exist: never someone else's cluster.
"$C/netns-up.sh" 2 || { echo "FAIL - netns-up.sh"; exit 1; }
trap '"$C/netns-down.sh" >/dev/null 2>&1; rm -rf "$W"' EXIT
N0=${HV_NS}n0 N1=${HV_NS}n1
worker=$B/tests/elastic/elastic_worker
# What netns-mpirun passes as flags, as MCA variables: hvrun builds mpirun's command.
on_node0() {
  "$C/netns-node" "$N0" env OMPI_MCA_plm_rsh_agent="$C/netns-rsh" OMPI_MCA_btl_tcp_if_include="$HV_NS_NET.0/24" \
    OMPI_MCA_oob_tcp_if_include="$HV_NS_NET.0/24" OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_vader_single_copy_mechanism=none \
    HV_TIMEOUT=5 HV_NS="$HV_NS" HV_NS_NET="$HV_NS_NET" "$@"
}
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }
# supervise NAME ARGS...: hvrun ARGS on node 0, its lines time-stamped into $W/NAME.txt,
# its exit code in $rc. A node cut off keeps its Open MPI daemon (as a dead node would
# keep nothing): once hvrun has ended, what is left in node 1 is killed, so that the
# daemon does not hold the output pipe open.
supervise() {
  local name=$1; shift
  rm -f "$W/$name.rc"
  ( timeout --signal=KILL 200 bash -c "$(declare -f on_node0); C='$C' N0='$N0' HV_NS='$HV_NS' HV_NS_NET='$HV_NS_NET' \
      on_node0 '$B/bin/hvrun' $*" 2>&1; echo $? >"$W/$name.rc" ) | stamp >"$W/$name.txt" &
  local pipe=$!
  for _ in $(seq 2200); do [ -s "$W/$name.rc" ] && break; sleep 0.1; done
  pids=$(ip netns pids "$N1" 2>/dev/null); [ -z "$pids" ] || kill -9 $pids 2>/dev/null
  wait $pipe
  rc=$(cat "$W/$name.rc" 2>/dev/null || echo none)
}
steps_in() { grep -c . "$1" 2>/dev/null || echo 0; }
check() { # check NAME FILE REGEX
  grep -Eq -- "$3" "$2" && lib_ok "$1: /$3/" || { lib_bad "$1: no line matches /$3/"; grep -v '\] \[' "$2" | sed 's/^/    | /' | tail -40; }
}

# kill
supervise kill --restarts 1 -np 2 -H $N0:1,$N1:1 "'$worker'" --steps 200 --state "'$W/kill'" --kill-rank 1 --kill-step 60
[ "$rc" = 0 ] && lib_ok "kill: exit 0" || { lib_bad "kill: exit $rc"; grep -v '\] \[' "$W/kill.txt" | tail -30; }
check kill "$W/kill.txt" " hvrun: restart 1 of 1: lost rank 1 on host $N1 \(killed by signal 9\); relaunching 2 ranks on $N0:1,$N1:1 "
check kill "$W/kill.txt" " DONE steps=200 restart=1 size=2$"
t_kill=$(grep -m1 " hvrun: restart 1 of 1" "$W/kill.txt" | cut -d' ' -f1)
# the kill itself: the last step line the first attempt wrote (its state file grows per step)
echo "# kill: relaunched job resumed (RESUMED) $(awk -v a="$t_kill" -v b="$(grep -m1 ' RESUMED ' "$W/kill.txt" | cut -d' ' -f1)" 'BEGIN{printf "%.2f", b-a}') s after hvrun's restart line"

# node_loss: cut node 1's link once the job has run a while
lose_node() { # FILE: waits for 40 steps, then cuts node 1 off
  for _ in $(seq 300); do [ "$(steps_in "$1")" -ge 40 ] && break; sleep 0.1; done
  date +%s.%N >"$1.cut"; ip -n "$N1" link set eth0 down
}
rm -f "$W/loss"
lose_node "$W/loss" &
supervise loss --restarts 1 --min-np 1 -np 2 -H $N0:1,$N1:1 "'$worker'" --steps 300 --state "'$W/loss'"
wait
ip -n "$N1" link set eth0 up
[ "$rc" = 0 ] && lib_ok "node_loss: exit 0" || { lib_bad "node_loss: exit $rc"; grep -v '\] \[' "$W/loss.txt" | tail -30; }
check node_loss "$W/loss.txt" " hvrun: host $N1 cannot take part any more"
check node_loss "$W/loss.txt" " hvrun: restart 1 of 1: lost .*; relaunching 1 rank on $N0:1 \(HV_RESTART=1\)$"
check node_loss "$W/loss.txt" " DONE steps=300 restart=1 size=1$"
t_cut=$(cat "$W/loss.cut" 2>/dev/null || echo 0)
echo "# node_loss: restart line $(awk -v a="$t_cut" -v b="$(grep -m1 ' hvrun: restart 1 of 1' "$W/loss.txt" | cut -d' ' -f1)" 'BEGIN{printf "%.1f", b-a}') s after the cut (HV_TIMEOUT=5, mpirun's teardown, the probe)"

# min_np: the same loss, but at least 2 ranks wanted
rm -f "$W/minnp"
lose_node "$W/minnp" &
supervise minnp --restarts 1 --min-np 2 -np 2 -H $N0:1,$N1:1 "'$worker'" --steps 300 --state "'$W/minnp'"
wait
ip -n "$N1" link set eth0 up
[ "$rc" != 0 ] && lib_ok "min_np: exit $rc" || lib_bad "min_np: exit 0"
check min_np "$W/minnp.txt" " hvrun: not restarting: 1 rank left on the hosts that remain, fewer than --min-np 2"
lib_summary
