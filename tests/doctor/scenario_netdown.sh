#!/bin/bash
# scenario_netdown.sh BUILD_DIR mpirun|hvrun: a node whose links go down (issue 22), on
# the emulated cluster of tests/cluster (network namespaces ${HV_NS}n0, ${HV_NS}n1; 2
# nodes x 2 ranks; HV_NS=hvd). doctor_worker runs; once every rank is READY node 1's
# link is cut (its bridge port, as tests/faults/netem_faults.sh does) and stays down
# until every rank has exited. Launched by tests/cluster/netns-mpirun, or by hvrun on
# node 0 with the same MCA settings; each rank's output goes to its own file (a cut-off
# node's output cannot reach mpirun).
#  - 2 s into the cut (HV_TIMEOUT=8 has not fired), `hvrun --status` from this host
#    (every rank's socket is on the shared file system) says
#    verdict: ranks 2-3 on host hvdn1 stopped answering (network?) during 'NAME'
#    (or ranks 0-1 on host hvdn0: live, both sides still answer), NAME one of the
#    worker's tensors;
#  - after every rank stopped with HV_TIMEOUT (dumps), `hvrun --analyze` says
#    verdict: ranks 2-3 on host hvdn1 stopped answering (network?) during 'NAME': HV_TIMEOUT on ...
# Exit 77 (skipped) without root or network namespaces; nothing is left behind.
set -u
B=$(cd "$1" && pwd); HOW=${2:-mpirun}
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
doctor_setup netdown-$HOW
# The teardown is armed only once our nodes exist: never someone else's cluster.
"$C/netns-up.sh" 2 || { lib_bad "netns-up.sh (HV_NS=$HV_NS HV_NS_NET=$HV_NS_NET)"; lib_summary; exit; }
netdown_cleanup() {
  ip -n "$FAB" link set p1 up 2>/dev/null
  doctor_cleanup
  "$C/netns-down.sh" >/dev/null 2>&1
}
trap netdown_cleanup EXIT
mkdir -p "$W/ranks"
envs=(HV_TIMEOUT=$TO HV_FLIGHT_RECORDER="$HV_FLIGHT_RECORDER" HV_STATUS_DIR="$HV_STATUS_DIR")
wrap=(bash -c 'exec > "$0/rank.$OMPI_COMM_WORLD_RANK" 2>&1; "$1" "${@:2}"; rc=$?; echo "EXIT rc=$rc"; exit $rc'
      "$W/ranks" "$DOCTOR_WORKER" run --connect-all --seconds 120)
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
ip -n "$FAB" link set p1 down
t_cut=$(date +%s%N)
sleep 2
names="'(grad/layer[0-7]|ctl/go)'"
want="^ranks 2-3 on host $N1 stopped answering \(network\?\) during $names"
# live, every rank still answers its socket: which side lost the network is not known
# yet, only that the two nodes' ranks wait for each other
doctor_status
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --status exit 0" || lib_bad "hvrun --status exit $DOCTOR_RC"
doctor_verdict "$W/status.txt" "status 2 s into the cut" \
  "^ranks (2-3 on host $N1|0-1 on host $N0) stopped answering \(network\?\) during $names"
doctor_wait_dumps $N $((TO + 15)) && lib_ok "$N dumps ($(( ($(date +%s%N) - t_cut) / 1000000 )) ms after the cut)" ||
  lib_bad "$(doctor_dumps) of $N dumps $((TO + 15)) s after the cut"
for _ in $(seq 150); do [ "$(cat "$W"/ranks/rank.* | grep -c '^EXIT ')" -ge $N ] && break; sleep 0.1; done
[ "$(cat "$W"/ranks/rank.* | grep -c '^EXIT rc=3')" = $N ] && lib_ok "every rank exited 3 (HV_TIMEOUT=$TO)" ||
  lib_bad "rank exits: $(grep -h '^EXIT' "$W"/ranks/rank.* | tr '\n' ' ')"
ip -n "$FAB" link set p1 up
doctor_analyze
[ "$DOCTOR_RC" = 0 ] && lib_ok "hvrun --analyze exit 0" || lib_bad "hvrun --analyze exit $DOCTOR_RC"
doctor_verdict "$W/analyze.txt" "analyze" "$want.*HV_TIMEOUT"
# a node cut off keeps its Open MPI daemon: what is left in node 1 goes (as in
# tests/elastic/elastic_netns.sh), then the launcher ends
pids=$(ip netns pids "$N1" 2>/dev/null); [ -z "$pids" ] || kill -9 $pids 2>/dev/null
doctor_end
trap - EXIT
netdown_cleanup
ns=$(ip netns list | awk '{print $1}' | grep -E "^${HV_NS}(n[0-9]+|fab)$" || true)
[ -z "$ns" ] && lib_ok "no namespace left" || lib_bad "namespaces left: $ns"
lib_summary
