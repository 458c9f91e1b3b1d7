#!/bin/bash
# Starts a single-node Slurm on this machine (slurmctld + slurmd, as root, no systemd),
# the node declaring CPUS cpus whatever the machine has, so `srun --ntasks-per-node=4`
# runs on a 2-core box.
# Usage: slurm-local-up.sh [CPUS=8]
# Env:   HV_SLURM_DIR (default /tmp/hv-slurm-local), HV_SLURM_AUTH, HV_SLURM_PORT
# Then:  export SLURM_CONF=$HV_SLURM_DIR/slurm.conf; srun --ntasks-per-node=4 hvrun prog
# Stop:  slurm-down.sh (same HV_SLURM_DIR)
set -euo pipefail
CPUS=${1:-8}
D=${HV_SLURM_DIR:-/tmp/hv-slurm-local}
PORT=${HV_SLURM_PORT:-6817}
HOST=$(hostname -s)
. "$(dirname "$0")/slurm-lib.sh"
t0=$(date +%s%N)
if ss -ltn | grep -qE ":($PORT|$((PORT+1))) "; then
  echo "slurm-local-up: port $PORT or $((PORT+1)) in use (another Slurm? set HV_SLURM_PORT)" >&2; exit 1
fi
mkdir -p "$D"/{state,spool,log,run,tmp}
AUTH=$(slurm_lib_auth_lines)
{
  echo "ClusterName=hvlocal"
  echo "SlurmctldHost=$HOST(127.0.0.1)"
  echo "$AUTH"
  slurm_lib_common_conf
  cat <<CONF
SlurmdSpoolDir=$D/spool
SlurmdPidFile=$D/run/slurmd.pid
SlurmdLogFile=$D/log/slurmd.log
TmpFS=$D/tmp
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
} > "$D/slurm.conf"
export SLURM_CONF=$D/slurm.conf
slurmctld -i      # -i: ignore saved state; daemonizes
slurmd            # daemonizes
for f in slurmctld slurmd; do
  slurm_lib_alive "$D/run/$f.pid" ||
    { echo "slurm-local-up: $f died; see $D/log/$f.log:" >&2; tail -5 "$D/log/$f.log" >&2; exit 1; }
done
st=
for _ in $(seq 300); do
  st=$(sinfo -h -n "$HOST" -o %T 2>/dev/null || true); [ "$st" = idle ] && break; sleep 0.1
done
echo "slurm-local-up: node $HOST ($CPUS CPUs) $st after $(( ($(date +%s%N)-t0)/1000000 )) ms; SLURM_CONF=$SLURM_CONF" >&2
[ "$st" = idle ]
# A first, trivial job step before any test's (as slurm-netns-up.sh does, for the
# same reason): the node's first step is the one that sets up its PMIx server.
for try in 1 2 3; do
  if timeout 30 srun -N1 -n1 true >/dev/null 2>&1; then break; fi
  echo "slurm-local-up: warm-up step $try failed; retrying" >&2
  [ "$try" = 3 ] && exit 1
  sleep 0.5
done
