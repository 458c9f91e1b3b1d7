#!/bin/bash
# faults_slurm.sh local|netns BUILD_DIR: the fault-injection checks of faults_run.sh
# under a real Slurm started for the test (tests/cluster/), as users launch:
#   local: one node (slurmctld + slurmd on this machine):
#          kill -9 under `srun -n 4` and `srun --ntasks-per-node=4 hvrun`, SIGSTOP and a
#          refused call under `srun -n 4`
#   netns: two emulated nodes (network namespaces, one slurmd each):
#          kill -9 of a rank on the other node than srun's, and of rank 0 (the
#          coordinator), under `srun -N2 --ntasks-per-node=2 [hvrun]`
# After each fault the Slurm job and step must be gone; after teardown no daemon,
# step, task, namespace or /dev/shm/hv-* segment. Exit 77 (skip) without root or the
# tools. Every launch runs under `timeout` (faults_run.sh).
set -u
kind=$1; B=$(cd "$2" && pwd)
H=$(cd "$(dirname "$0")" && pwd); C=$(cd "$H/../cluster" && pwd)
. "$H/../launch/launch_lib.sh"
. "$H/faults_lib.sh"
case $kind in
  local) lib_need_root_tools slurmctld slurmd srun sinfo squeue ss ;;
  netns) lib_need_root_tools ip nsenter unshare slurmctld slurmd srun sinfo squeue ss
         ip netns add hvprobe$$ 2>/dev/null && ip netns del hvprobe$$ ||
           { echo "SKIP: cannot create network namespaces here"; exit 77; } ;;
  *) echo "usage: faults_slurm.sh local|netns BUILD_DIR" >&2; exit 2 ;;
esac
for v in $(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\|HV\)_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FAULTS_TIMEOUT=60
export HV_SLURM_DIR; HV_SLURM_DIR=$(mktemp -d /tmp/hv-slurm-faults.XXXXXX)
export HV_SLURM_PORT; HV_SLURM_PORT=$(lib_free_port) || { echo "no free Slurm port pair"; exit 1; }
export SLURM_CONF=$HV_SLURM_DIR/slurm.conf
export HV_NS=hvq HV_NS_NET=10.85.0
N0=${HV_NS}n0
shm_before=$(faults_hv_shm)
teardown() {
  "$C/slurm-down.sh" >/dev/null 2>&1
  [ "$kind" = netns ] && "$C/netns-down.sh" >/dev/null 2>&1
  rm -rf "$HV_SLURM_DIR"
}
trap teardown EXIT
t0=$(date +%s%N)
if [ "$kind" = local ]; then
  "$C/slurm-local-up.sh" 8 || { lib_bad "slurm-local-up.sh"; tail -20 "$HV_SLURM_DIR"/log/*.log; exit 1; }
  on_node() { "$@"; }
else
  "$C/netns-up.sh" 2 >/dev/null || { lib_bad "netns-up.sh"; exit 1; }
  "$C/slurm-netns-up.sh" 2 4 || { lib_bad "slurm-netns-up.sh"; tail -20 "$HV_SLURM_DIR"/log/*.log; exit 1; }
  on_node() { "$C/netns-node" "$N0" "$@"; }  # client commands run on node 0
fi
echo "# $kind Slurm up in $(lib_ms "$t0") ms"
export PATH="$B/bin:$PATH"
cd "$B" || exit 1
W=tests/faults/faults_worker

# fault LABEL MODE VICTIM ENV... -- CMD...: faults_run.sh, then the job must be gone
fault() {
  local label=$1 mode=$2 victim=$3 envs=() out rc; shift 3
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  out=$(env "${envs[@]}" FAULTS_LABEL="$label" bash "$H/faults_run.sh" "$mode" "$victim" 4 "$@" 2>&1); rc=$?
  printf '%s\n' "$out" | sed 's/^/  /'
  [ $rc = 0 ] && lib_ok "$mode rank $victim under $label" || lib_bad "$mode rank $victim under $label"
  local _ jobs=; for _ in $(seq 50); do
    jobs=$(on_node squeue -h -o '%i %T' 2>/dev/null); [ -z "$jobs" ] && break; sleep 0.1
  done
  [ -z "$jobs" ] && lib_ok "the Slurm job and its step ended" || { lib_bad "Slurm jobs left: $jobs"; on_node scancel --full -u root 2>/dev/null; }
}

if [ "$kind" = local ]; then
  fault "srun -n 4" kill 1 HV_TIMEOUT=4 -- srun -n 4 $W
  fault "srun --ntasks-per-node=4 hvrun" kill 3 HV_TIMEOUT=4 -- srun --ntasks-per-node=4 hvrun $W
  fault "srun -n 4" stop 2 HV_STALL_CHECK_TIME=2 HV_STALL_SHUTDOWN_TIME=5 HV_TIMEOUT=30 -- srun -n 4 $W
  fault "srun -n 4" bad-input 1 HV_TIMEOUT=10 -- srun -n 4 $W
else
  fault "srun -N2 --ntasks-per-node=2 hvrun" kill 3 HV_TIMEOUT=4 -- "$C/netns-node" "$N0" srun -N2 --ntasks-per-node=2 hvrun $W
  fault "srun -N2 --ntasks-per-node=2" kill 0 HV_TIMEOUT=4 -- "$C/netns-node" "$N0" srun -N2 --ntasks-per-node=2 $W
  # Not `hvrun -np 4 -H n0:2,n1:2` (Open MPI's mpirun across the nodes): there the
  # survivor whose TCP connection to the killed rank breaks is held inside MPI by
  # Open MPI's own "peer hung up" message, which waits for mpirun while mpirun waits
  # 1 s before SIGTERM; that rank then dies without its line (the others print theirs).
fi

trap - EXIT
t0=$(date +%s%N); teardown
left=$(lib_cluster_procs "$HV_SLURM_DIR")
[ -z "$left" ] && lib_ok "teardown in $(lib_ms "$t0") ms: no daemon, step, task or srun left" || lib_bad "left behind: $left"
if [ "$kind" = netns ]; then
  ns=$(ip netns list | awk '{print $1}' | grep -E "^${HV_NS}(n[0-9]+|fab)$" || true)
  [ -z "$ns" ] && lib_ok "no namespace left" || lib_bad "namespaces left: $ns"
fi
shm_new=$(comm -13 <(printf '%s\n' "$shm_before" | sort) <(faults_hv_shm | sort) | grep . || true)
[ -z "$shm_new" ] && lib_ok "no /dev/shm/hv-* left" || lib_bad "left in /dev/shm: $shm_new"
lib_summary
