#!/bin/bash
# scenario_cluster.sh BUILD_DIR netdown|stuck|dead mpirun|hvrun: doctor scenarios (issue
# 22) on the emulated cluster of tests/cluster (network namespaces ${HV_NS}n0, ${HV_NS}n1,
# HV_NS=hvd; 2 nodes x 2 ranks, ranks 2-3 on node 1). Launched by tests/cluster/netns-mpirun,
# or by hvrun on node 0 with the same MCA settings; each rank's output goes to its own
# file (a cut-off node's output cannot reach mpirun). `hvrun --status` runs on this
# host: every rank's status socket lies on the shared file system.
#   netdown  once every rank is READY node 1's link is cut (its bridge port, as
#            tests/faults/netem_faults.sh does) and stays down until every rank exited.
#            2 s into the cut (HV_TIMEOUT=8 has not fired) --status says
#              verdict: ranks 2-3 on host hvdn1 stopped answering (network?) during 'NAME'
#            (or ranks 0-1 on host hvdn0: live, both sides still answer); after every
#            rank stopped with HV_TIMEOUT (dumps), --analyze says the same of ranks 2-3,
#            with ": HV_TIMEOUT on ...".
#   stuck    rank 2 (node 1) sleeps for ever before 'grad/layer3' at step 4: --status,
#            and --analyze on the dumps SIGUSR1 makes, say
#              verdict: rank 2 never submitted 'grad/layer3'; its last submission was 'grad/layer4' ...
#   dead     rank 3 (node 1) is SIGKILLed; the survivors (rank 2 beside it, ranks 0-1
#            told by it) linger 4 s: --status, and --analyze on their dumps, say
#              verdict: rank 3 died (its process is gone) during 'NAME'
# NAME: one of the worker's tensors. Exit 77 (skipped) without root or network
# namespaces; nothing is left behind (namespaces, ranks, Open MPI daemons).
set -u
B=$(cd "$1" && pwd); CASE=$2 HOW=${3:-mpirun}
H=$(cd "$(dirname "$0")" && pwd); C=$(cd "$H/../cluster" && pwd)
. "$H/../launch/launch_lib.sh"; . "$H/../faults/faults_lib.sh"
lib_need_root_tools ip nsenter unshare
ip netns add hvprobe$$ 2>/dev/null && ip netns del hvprobe$$ || { echo "SKIP: cannot create network namespaces"; exit 77; }
for v in $(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\)_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export HV_NS=hvd HV_NS_NET=10.89.0
export HVRUN=${HVRUN:-$B/bin/hvrun} DOCTOR_WORKER=${DOCTOR_WORKER:-$B/tests/doctor/doctor_worker}
. "$H/scenario_lib.sh"
N=4 TO=8
N0=${HV_NS}n0 N1=${HV_NS}n1 FAB=${HV_NS}fab
names="'(grad/layer[0-7]|ctl/go)'"
case $CASE in
  netdown) args=(run --connect-all --seconds 120) ;;
  stuck) args=(stuck --victim 2 --step 4 --layer 3 --seconds 120) ;;
  # the survivors linger for --status; mpirun must not kill them at once
  dead) args=(run --linger 4 --seconds 120); export OMPI_MCA_orte_abort_on_non_zero_status=0 ;;
  *) echo "usage: scenario_cluster.sh BUILD_DIR netdown|stuck|dead mpirun|hvrun" >&2; exit 2 ;;
esac
doctor_setup "cluster-$CASE-$HOW"
# The teardown is armed only once our nodes exist: never someone else's cluster.
"$C/netns-up.sh" 2 || { lib_bad "netns-up.sh (HV_NS=$HV_NS HV_NS_NET=$HV_NS_NET)"; lib_summary; exit; }
cluster_cleanup() {
  ip -n "$FAB" link set p1 up 2>/dev/null
  # a node cut off keeps its Open MPI daemon: what is left in node 1 goes (as in
  # tests/elastic/elastic_netns.sh), then the launcher ends
  local pids; pids=$(ip netns pids "$N1" 2>/dev/null); [ -z "$pids" ] || kill -9 $pids 2>/dev/null
  doctor_cleanup
  "$C/netns-down.sh" >/dev/null 2>&1
}
trap cluster_cleanup EXIT
mkdir -p "$W/ranks"
envs=(HV_TIMEOUT=$TO HV_FLIGHT_RECORDER="$HV_FLIGHT_RECORDER" HV_STATUS_DIR="$HV_STATUS_DIR")
wrap=(bash -c 'exec > "$0/rank.$OMPI_COMM_WORLD_RANK" 2>&1; "$1" "${@:2}"; rc=$?; echo "EXIT rc=$rc"; exit $rc'
      "$W/ranks" "$DOCTOR_WORKER" "${args[@]}")
if [ "$HOW" = hvrun ]; then
  timeout --signal=KILL 150 "$C/netns-node" "$N0" env OMPI_MCA_plm_rsh_agent="$C/netns-rsh" \
    OMPI_MCA_btl_tcp_if_include="$HV_NS_NET.0/24" OMPI_MCA_oob_tcp_if_include="$HV_NS_NET.0/24" \
    OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl_tcp_links=2 \
    "${envs[@]}" "$HVRUN" -np $N -H "$N0:2,$N1:2" "${wrap[@]}" > "$W/out" 2>&1 &
else
  timeout --signal=KILL 150 "$C/netns-mpirun" "$N0:2,$N1:2" $N "${envs[@]}" -- "${wrap[@]}" > "$W/out" 2>&1 &
fi
FAULTS_LP=$!
for _ in $(seq 900); do
  [ "$(cat "$W"/ranks/rank.* 2>/dev/null | grep -c '^READY ')" -ge $N ] && break
  kill -0 "$FAULTS_LP" 2>/dev/null || break; sleep 0.1
done
cat "$W"/ranks/rank.* > "$W/ready" 2>/dev/null
DOCTOR_PIDS=$(sed -n 's/^READY .*pid=\([0-9]*\).*/\1/p' "$W/ready")
if [ "$(grep -c '^READY ' "$W/ready")" != $N ]; then
  lib_bad "$(grep -c '^READY ' "$W/ready") of $N ranks READY ($HOW)"; tail -20 "$W/out" "$W"/ranks/* | sed 's/^/    | /'
  lib_summary; exit
fi
lib_ok "$N ranks READY on $N0 and $N1 ($HOW): $(sed -n 's/^READY rank=\([0-9]*\) .*host=\(.*\)/\1@\2/p' "$W/ready" | sort | tr '\n' ' ')"
host_of() { sed -n "s/^READY rank=$1 .*host=\([^ ]*\).*/\1/p" "$W/ready"; }
[ "$(host_of 2)" = "$N1" ] && [ "$(host_of 3)" = "$N1" ] || lib_bad "ranks 2-3 are not on $N1"
status_ok() { [ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"; }
analyze_ok() { [ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"; }
exits() { cat "$W"/ranks/rank.* | grep -c "^EXIT ${1:-}"; }

case $CASE in
netdown)
  ip -n "$FAB" link set p1 down
  t_cut=$(date +%s%N)
  sleep 2
  doctor_status; status_ok
  doctor_verdict "$W/status.txt" "status 2 s into the cut" \
    "^ranks (2-3 on host $N1|0-1 on host $N0) stopped answering \(network\?\) during $names"
  doctor_wait_dumps $N $((TO + 15)) && lib_ok "$N dumps ($(( ($(date +%s%N) - t_cut) / 1000000 )) ms after the cut)" ||
    lib_bad "$(doctor_dumps) of $N dumps $((TO + 15)) s after the cut"
  for _ in $(seq 150); do [ "$(exits)" -ge $N ] && break; sleep 0.1; done
  [ "$(exits rc=3)" = $N ] && lib_ok "every rank exited 3 (HV_TIMEOUT=$TO)" ||
    lib_bad "rank exits: $(grep -h '^EXIT' "$W"/ranks/rank.* | tr '\n' ' ')"
  ip -n "$FAB" link set p1 up
  doctor_analyze; analyze_ok
  doctor_verdict "$W/analyze.txt" "analyze" "^ranks 2-3 on host $N1 stopped answering \(network\?\) during $names: HV_TIMEOUT on "
  ;;
stuck)
  for _ in $(seq 200); do grep -q "^STUCK rank=2 " "$W/ranks/rank.2" && break; sleep 0.1; done
  sleep 2
  want="^rank 2 never submitted 'grad/layer3'; its last submission was 'grad/layer4' [0-9.]+ s ago and it has been in user code since"
  doctor_status; status_ok
  doctor_verdict "$W/status.txt" "status during the hang (rank 2 on $N1)" "$want"
  for p in $DOCTOR_PIDS; do kill -USR1 "$p"; done
  doctor_wait_dumps $N 30 && lib_ok "$N dumps after SIGUSR1" || lib_bad "$(doctor_dumps) of $N dumps after SIGUSR1"
  doctor_analyze; analyze_ok
  doctor_verdict "$W/analyze.txt" "analyze" "$want"
  ;;
dead)
  kill -KILL "$(sed -n 's/^READY rank=3 .*pid=\([0-9]*\).*/\1/p' "$W/ready")"
  doctor_wait_dumps $((N - 1)) 15 && lib_ok "$((N - 1)) dumps after the kill" || lib_bad "$(doctor_dumps) of $((N - 1)) dumps after the kill"
  doctor_status; status_ok
  doctor_verdict "$W/status.txt" "status while the survivors linger" "^rank 3 died \(its process is gone\) during $names"
  doctor_wait_ranks 30 && lib_ok "the survivors exited" || lib_bad "survivors still running 30 s after the kill"
  doctor_analyze; analyze_ok
  doctor_verdict "$W/analyze.txt" "analyze" "^rank 3 died \(its process is gone\) during $names"
  ;;
esac
doctor_end
trap - EXIT
cluster_cleanup
ns=$(ip netns list | awk '{print $1}' | grep -E "^${HV_NS}(n[0-9]+|fab)$" || true)
[ -z "$ns" ] && lib_ok "no namespace left" || lib_bad "namespaces left: $ns"
lib_summary
