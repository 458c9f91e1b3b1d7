#!/bin/bash
# hier_netns.sh BUILD_DIR [RATE]: hierarchical allreduce on a real multi-node setup
# emulated with network namespaces (tests/cluster/): nodes with their own address
# and hostname, Open MPI entering them through netns-rsh, traffic between nodes over
# veth links (optionally limited to RATE with tbf).
#  1. exact results of every collective and dtype, 2 nodes x 2 ranks and 4 nodes x 1
#     rank, hierarchical forced and auto (allgather and broadcast hierarchical too:
#     by auto on 2 x 2, forced on 4 x 1); the fp16/bf16 error bound on 2 x 2;
#  2. bytes on node 0's link for one 64 MiB allreduce, flat ring against
#     hierarchical: hierarchical must send at most 0.75 of the ring's bytes (the
#     byte count says 2/3: a block-ordered ring puts 1.5 S on each link direction,
#     hierarchical S), and fp16 at most 0.55 of hierarchical's;
#  3. the same collectives test under srun -N2 --ntasks-per-node=2 (Slurm, one slurmd
#     per node).
# Every run is judged by mpirun's (or srun's) exit status, which is non-zero when any
# rank fails, and then by rank 0's summary line.
# Exit 77 (skipped) without root or the tools. Teardown leaves nothing behind.
set -u
B=$(cd "$1" && pwd); RATE=${2:-}
H=$(cd "$(dirname "$0")" && pwd); C=$(cd "$H/../cluster" && pwd)
. "$H/../launch/launch_lib.sh"
lib_need_root_tools ip nsenter unshare tc
ip netns add hvprobe$$ 2>/dev/null && ip netns del hvprobe$$ || { echo "SKIP: cannot create network namespaces"; exit 77; }
for v in $(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\)_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export HV_NS=${HV_NS:-hvh} HV_NS_NET=${HV_NS_NET:-10.81.0} LIB_TIMEOUT=240
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HV_SLURM_DIR; HV_SLURM_DIR=$(mktemp -d /tmp/hv-slurm-hier.XXXXXX)
export SLURM_CONF=$HV_SLURM_DIR/slurm.conf
slurm=0
teardown() {
  [ $slurm = 1 ] && "$C/slurm-down.sh" >/dev/null 2>&1
  "$C/netns-down.sh" >/dev/null 2>&1
  rm -rf "$HV_SLURM_DIR"
}
# (the trap only once the nodes are ours: a cluster of the same HV_NS is someone else's)
"$C/netns-up.sh" 4 $RATE || { echo "FAIL - netns-up.sh (HV_NS=$HV_NS HV_NS_NET=$HV_NS_NET)"; rm -rf "$HV_SLURM_DIR"; exit 1; }
trap teardown EXIT
N0=${HV_NS}n0
T=$B/tests/collectives
# mpirun across the emulated nodes: $M HOSTS NP ENV... -- PROGRAM ARGS...
M=$C/netns-mpirun
tx_bytes() { ip -n "$1" -s link show eth0 | awk '/TX:/{getline; print $1}'; }

H22=${HV_NS}n0:2,${HV_NS}n1:2
H41=${HV_NS}n0:1,${HV_NS}n1:1,${HV_NS}n2:1,${HV_NS}n3:1
lib_expect "2 nodes x 2 ranks: every collective and dtype, hier and auto" 0 "0 failures on all ranks" \
  "$M" "$H22" 4 HV_TIMEOUT=120 -- "$T/mpi_collectives" --algos=hier,auto
lib_expect "4 nodes x 1 rank: every collective and dtype, hier (allgather, broadcast too)" 0 "0 failures on all ranks" \
  "$M" "$H41" 4 HV_TIMEOUT=120 HV_HIERARCHICAL_ALLREDUCE=1 -- "$T/mpi_collectives" --algos=hier
lib_expect "2 nodes x 2 ranks: fp16/bf16 error bound" 0 "0 failures on all ranks" \
  "$M" "$H22" 4 -- "$T/mpi_compression"

# Bytes on node 0's link, per algorithm, for 3 allreduces of 64 MiB.
declare -A sent
for run in "ring none" "hier none" "hier fp16" "mpi none"; do
  set -- $run
  before=$(tx_bytes "$N0")
  out=$(timeout --signal=KILL 240 "$M" "$H22" 4 HV_ALLREDUCE_ALGO=$1 -- "$T/allreduce_bytes" 67108864 3 "$2" 2>&1)
  rc=$?
  after=$(tx_bytes "$N0")
  sent[$1.$2]=$(( (after - before) / 3 ))
  echo "    $(printf '%s\n' "$out" | grep allreduce_bytes:) | node 0 sent $(( sent[$1.$2] / 1048576 )) MiB per allreduce"
  # mpirun's exit status speaks for every rank (each checks its own results and exits
  # non-zero on a wrong one or a failed call); rank 0's line speaks for rank 0 only.
  [ $rc = 0 ] && printf '%s\n' "$out" | grep -q "results correct" ||
    lib_bad "allreduce_bytes $run: mpirun rc $rc: $(printf '%s\n' "$out" | tail -20)"
done
r=${sent[ring.none]}; h=${sent[hier.none]}; f=${sent[hier.fp16]}
[ $((h * 4)) -le $((r * 3)) ] && lib_ok "hierarchical sends $((h * 100 / r))% of the flat ring's bytes across nodes (byte count: 67%)" ||
  lib_bad "hierarchical sent $h bytes, flat ring $r: expected at most 75%"
[ $((f * 100)) -le $((h * 55)) ] && lib_ok "fp16 sends $((f * 100 / h))% of uncompressed hierarchical (byte count: 50%)" ||
  lib_bad "fp16 sent $f bytes vs $h uncompressed: expected at most 55%"

# Slurm across the emulated nodes.
if command -v slurmctld >/dev/null && command -v srun >/dev/null; then
  if "$C/slurm-netns-up.sh" 2 4 >/dev/null 2>&1; then
    slurm=1
    lib_expect "srun -N2 --ntasks-per-node=2: every collective and dtype, hier and auto" 0 "0 failures on all ranks" \
      "$C/netns-node" "$N0" env HV_TIMEOUT=120 srun -N2 --ntasks-per-node=2 "$T/mpi_collectives" --algos=hier,auto
  else
    lib_bad "slurm-netns-up.sh failed: $(tail -5 "$HV_SLURM_DIR"/log/*.log 2>/dev/null)"
  fi
fi
trap - EXIT
teardown
ns=$(ip netns list | awk '{print $1}' | grep -E "^${HV_NS}(n[0-9]+|fab)$" || true)
[ -z "$ns" ] && lib_ok "no namespace left" || lib_bad "namespaces left: $ns"
hvshm=$(ls /dev/shm | grep '^hv-' || true)
[ -z "$hvshm" ] && lib_ok "no hv shared-memory segment left" || lib_bad "left in /dev/shm: $hvshm"
lib_summary
