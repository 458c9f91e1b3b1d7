#!/bin/bash
# Multi-node Slurm on one machine: one slurmd per emulated node made by netns-up.sh
# (each in its own network namespace, so each has its own address and port), and
# slurmctld on node 0. Client commands must run inside a node:
#   SLURM_CONF=$HV_SLURM_DIR/slurm.conf netns-node hvn0 srun -N2 --ntasks-per-node=2 hvrun prog
# Usage: slurm-netns-up.sh [N=2] [CPUS_PER_NODE=4]
# Env:   HV_NS, HV_NS_NET (as netns-up.sh), HV_SLURM_DIR (default /tmp/hv-slurm-netns),
#        HV_SLURM_AUTH, HV_SLURM_PORT.  Stop: slurm-down.sh, then netns-down.sh.
set -euo pipefail
N=${1:-2}; CPUS=${2:-4}
P=${HV_NS:-hv}; NET=${HV_NS_NET:-10.77.0}; D=${HV_SLURM_DIR:-/tmp/hv-slurm-netns}
S=$(cd "$(dirname "$0")" && pwd)
. "$S/slurm-lib.sh"
t0=$(date +%s%N)
mkdir -p "$D"/{state,spool,log,run}
# per-node TmpFS: each slurmstepd's PMIx makes spmix_appdir_<job>.<step> there; a
# shared one makes the second node's step fail ("pmixp_mkdir ... File exists")
for i in $(seq 0 $((N-1))); do mkdir -p "$D/spool/${P}n$i" "$D/tmp/${P}n$i"; done
AUTH=$(slurm_lib_auth_lines)
{
  echo "ClusterName=hvnetns"
  echo "SlurmctldHost=${P}n0($NET.1)"
  echo "$AUTH"
  slurm_lib_common_conf
  cat <<CONF
SlurmdSpoolDir=$D/spool/%n
SlurmdPidFile=$D/run/slurmd.%n.pid
SlurmdLogFile=$D/log/slurmd.%n.log
TmpFS=$D/tmp/%n
NodeName=${P}n[0-$((N-1))] NodeAddr=$NET.[1-$N] CPUs=$CPUS State=UNKNOWN
PartitionName=debug Nodes=${P}n[0-$((N-1))] Default=YES MaxTime=INFINITE State=UP
CONF
} > "$D/slurm.conf"
export SLURM_CONF=$D/slurm.conf
"$S/netns-node" "${P}n0" slurmctld -i
for i in $(seq 0 $((N-1))); do "$S/netns-node" "${P}n$i" slurmd -N "${P}n$i"; done
for f in "$D/run/slurmctld.pid" $(for i in $(seq 0 $((N-1))); do echo "$D/run/slurmd.${P}n$i.pid"; done); do
  slurm_lib_alive "$f" || { echo "slurm-netns-up: the daemon of $f died; logs in $D/log" >&2; exit 1; }
done
idle=0
for _ in $(seq 300); do
  idle=$(nsenter --net=/run/netns/"${P}n0" sinfo -h -t idle -o %D 2>/dev/null || true)
  [ "${idle:-0}" = "$N" ] && break; sleep 0.1
done
echo "slurm-netns-up: ${idle:-0}/$N nodes idle after $(( ($(date +%s%N)-t0)/1000000 )) ms; SLURM_CONF=$SLURM_CONF" >&2
[ "${idle:-0}" = "$N" ]
# A first job step on every node before any test's: "idle" comes before the nodes'
# step daemons and their PMIx servers have ever run, and in CI the first MPI job right
# after bring-up once lost a rank at start-up (a segfault inside MPI_Init) on a node
# that had not launched a step yet. A trivial step on every node warms that path.
for try in 1 2 3; do
  if timeout 30 "$S/netns-node" "${P}n0" srun -N "$N" --ntasks-per-node=1 true >/dev/null 2>&1; then break; fi
  echo "slurm-netns-up: warm-up step $try failed; retrying" >&2
  [ "$try" = 3 ] && exit 1
  sleep 0.5
done
