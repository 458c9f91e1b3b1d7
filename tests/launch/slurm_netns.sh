#!/bin/bash
# hvrun on an emulated 2-node cluster: two network namespaces on a bridge (each with
# its own address and hostname), one slurmd per node, slurmctld on node 0; then
#   srun -N2 --ntasks-per-node=2 hvrun tests/launch/launch_probe
# must see 2 nodes x 2 local ranks, disjoint cores within each node, and an allreduce
# across all 4; the standalone launcher must span the nodes too:
#   hvrun -np 4 -H <node0>:2,<node1>:2 tests/launch/launch_probe
# (mpirun entering the nodes through tests/cluster/netns-rsh instead of ssh).
# and cifar_ddp trains across both nodes (srun -N2 --ntasks-per-node=2, tiny CIFAR files).
# Teardown leaves no daemon, job, namespace or shared-memory segment of these nodes.
# Exit 77 (skip) without root, iproute2, nsenter/unshare or Slurm.
# Usage: slurm_netns.sh BUILD_DIR   (env HV_NS / HV_NS_NET pick names and subnet)
set -u
B=$(cd "$1" && pwd); H=$(cd "$(dirname "$0")" && pwd); C=$(cd "$H/../cluster" && pwd)
. "$H/launch_lib.sh"
lib_need_root_tools ip nsenter unshare slurmctld slurmd srun sinfo
for v in $(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\)_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
ip netns list >/dev/null 2>&1 && ip netns add hvprobe$$ 2>/dev/null && ip netns del hvprobe$$ ||
  { echo "SKIP: cannot create network namespaces here"; exit 77; }
export HV_NS=${HV_NS:-hvl} HV_NS_NET=${HV_NS_NET:-10.79.0}
N0=${HV_NS}n0; N1=${HV_NS}n1
export HV_SLURM_DIR; HV_SLURM_DIR=$(mktemp -d /tmp/hv-slurm-netns.XXXXXX)
export SLURM_CONF=$HV_SLURM_DIR/slurm.conf
shm_of_nodes() { ls /dev/shm 2>/dev/null | grep -E "\.($N0|$N1)\." || true; }
teardown() {
  "$C/slurm-down.sh" >/dev/null
  "$C/netns-down.sh"
  rm -rf "$HV_SLURM_DIR"
}
trap teardown EXIT
t0=$(date +%s%N)
"$C/netns-up.sh" 2 || { lib_bad "netns-up.sh"; exit 1; }
"$C/slurm-netns-up.sh" 2 4 || { lib_bad "slurm-netns-up.sh"; tail -20 "$HV_SLURM_DIR"/log/*.log; exit 1; }
echo "# 2 emulated nodes with slurmd up in $(lib_ms "$t0") ms"

export PATH="$B/bin:$PATH"
cd "$B"
O=$HV_SLURM_DIR/out
t0=$(date +%s%N)
timeout --signal=KILL 60 "$C/netns-node" "$N0" srun -N2 --ntasks-per-node=2 \
  hvrun tests/launch/launch_probe --expect-size 4 --expect-nodes 2 > "$O.1" 2>&1
lib_check_probe "srun -N2 --ntasks-per-node=2 hvrun launch_probe ($(lib_ms "$t0") ms)" "$O.1" 4 2 disjoint
[ "$(grep -c ' local=[01]/2 .*host=\(hvl\|'"$HV_NS"'\)n[01] ' "$O.1")" = 4 ] &&
  [ "$(grep -c "host=$N0 " "$O.1")" = 2 ] && [ "$(grep -c "host=$N1 " "$O.1")" = 2 ] &&
  lib_ok "2 nodes x 2 local ranks ($N0, $N1)" || lib_bad "not 2 nodes x 2 local ranks"

if [ "${HV_HAVE_CHECK:-0}" = 1 ]; then
  LIB_SHOW=1 lib_expect "srun -N2 --ntasks-per-node=2 hvrun --check" 0 'hvrun --check: 4 ranks on 2 nodes: PASSED' \
    "$C/netns-node" "$N0" srun -N2 --ntasks-per-node=2 hvrun --check
fi

# the main workload across the 2 nodes: cifar_ddp on tiny CIFAR-10 files, 3 epochs
D=$HV_SLURM_DIR/cifar-data
mkdir -p "$D" && tests/cifar/make_tiny_cifar "$D" 32 32 >/dev/null || lib_bad "make_tiny_cifar"
t0=$(date +%s%N)
timeout --signal=KILL 120 "$C/netns-node" "$N0" srun -N2 --ntasks-per-node=2 hvrun workloads/cifar_ddp \
  --dataset cifar10 --data-dir "$D" --batch-size 16 --train-size 64 --epochs 3 --lr-scaling none \
  --base-lr 0.1 --no-augment --results "$HV_SLURM_DIR/cifar" > "$O.3" 2>&1
lib_check_cifar "srun -N2 --ntasks-per-node=2 hvrun workloads/cifar_ddp ($(lib_ms "$t0") ms)" $? "$O.3" 4 2 \
  "$HV_SLURM_DIR/cifar"

# standalone: hvrun execs mpirun, which enters node 1 through netns-rsh (Open MPI
# passes OMPI_MCA_* on to its remote daemons itself)
t0=$(date +%s%N)
timeout --signal=KILL 60 env OMPI_MCA_plm_rsh_agent="$C/netns-rsh" \
  OMPI_MCA_btl_tcp_if_include="$HV_NS_NET.0/24" OMPI_MCA_oob_tcp_if_include="$HV_NS_NET.0/24" \
  "$C/netns-node" "$N0" hvrun -np 4 -H "$N0:2,$N1:2" tests/launch/launch_probe --expect-size 4 --expect-nodes 2 \
  > "$O.2" 2>&1
lib_check_probe "hvrun -np 4 -H $N0:2,$N1:2 launch_probe ($(lib_ms "$t0") ms)" "$O.2" 4 2 disjoint

trap - EXIT
t0=$(date +%s%N); teardown
left=$(lib_cluster_procs "$HV_SLURM_DIR")
[ -z "$left" ] && lib_ok "teardown in $(lib_ms "$t0") ms: no daemon left" || lib_bad "daemons left: $left"
ns=$(ip netns list | awk '{print $1}' | grep -E "^${HV_NS}(n[0-9]+|fab)$" || true)
[ -z "$ns" ] && lib_ok "no namespace left" || lib_bad "namespaces left: $ns"
shm=$(shm_of_nodes)
[ -z "$shm" ] && lib_ok "no shared-memory segment of $N0/$N1 left" || lib_bad "shm left: $shm"
lib_summary
