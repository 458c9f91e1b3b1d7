#!/bin/bash
# hvrun under a real single-node Slurm, typed as a user types it, from the build
# directory with hvrun found on PATH through <build>/bin:
#   srun --ntasks-per-node=4 hvrun tests/launch/launch_probe
# The cluster (slurmctld + slurmd, auth/none unless HV_SLURM_AUTH=munge) declares 8
# CPUs on this (possibly 2-core) machine; it is started by tests/cluster/ scripts in a
# fresh directory and torn down on exit, leaving no daemon or job behind.
# Then the card's own command, on tiny CIFAR files, from the build directory and from
# an install prefix: srun --ntasks-per-node=4 hvrun workloads/cifar_ddp ...
# Also: 2 tasks get disjoint cores; srun without PMIx fails with the fixes named;
# hvrun --check (when built with libhvcoll). Exit 77 (skip) without root or Slurm.
# Usage: slurm_local.sh BUILD_DIR
set -u
B=$(cd "$1" && pwd); H=$(cd "$(dirname "$0")" && pwd); C=$(cd "$H/../cluster" && pwd)
. "$H/launch_lib.sh"
lib_need_root_tools slurmctld slurmd srun sinfo ss
HAVE_CHECK=${HV_HAVE_CHECK:-0}
for v in $(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\|HV\)_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export HV_SLURM_DIR; HV_SLURM_DIR=$(mktemp -d /tmp/hv-slurm-local.XXXXXX)
export HV_SLURM_PORT; HV_SLURM_PORT=$(lib_free_port) || { echo "no free Slurm port pair"; exit 1; }
export SLURM_CONF=$HV_SLURM_DIR/slurm.conf
SHM_BEFORE=$(mktemp /tmp/hv-shm-before.XXXXXX); ls /dev/shm > "$SHM_BEFORE" 2>/dev/null
teardown() {
  "$C/slurm-down.sh" >/dev/null
  rm -rf "$HV_SLURM_DIR" "${1:-}"
}
trap 'teardown "$SHM_BEFORE"' EXIT
t0=$(date +%s%N)
"$C/slurm-local-up.sh" 8 || { lib_bad "slurm-local-up.sh"; tail -20 "$HV_SLURM_DIR"/log/*.log; exit 1; }
echo "# single-node Slurm up in $(lib_ms "$t0") ms (port $HV_SLURM_PORT)"

export PATH="$B/bin:$PATH"
cd "$B"
O=$HV_SLURM_DIR/out
t0=$(date +%s%N)
timeout --signal=KILL 60 srun --ntasks-per-node=4 hvrun tests/launch/launch_probe --expect-size 4 > "$O.1" 2>&1
lib_check_probe "srun --ntasks-per-node=4 hvrun tests/launch/launch_probe ($(lib_ms "$t0") ms)" "$O.1" 4 1
grep -q 'oversubscribed' "$O.1" && [ "$(nproc)" -lt 4 ] && lib_ok "4 ranks on $(nproc) cores reported as oversubscribed"

t0=$(date +%s%N)
timeout --signal=KILL 60 srun -n 2 hvrun tests/launch/launch_probe --expect-size 2 > "$O.2" 2>&1
if [ "$(nproc)" -ge 2 ]; then
  lib_check_probe "srun -n 2 hvrun: disjoint cores ($(lib_ms "$t0") ms)" "$O.2" 2 1 disjoint
else
  lib_check_probe "srun -n 2 hvrun ($(lib_ms "$t0") ms)" "$O.2" 2 1
fi
lib_expect "srun --mpi=none: hvrun names the PMIx fixes" 1 'without PMIx.*srun --mpi=pmix' \
  srun --mpi=none -n 2 hvrun tests/launch/launch_probe
lib_expect "srun hvrun: program not found names rank and host" 127 "rank 1/2 \(local 1/2\) on host [^:]+: cannot run 'tests/launch/nope'" \
  srun -n 2 hvrun tests/launch/nope
lib_expect "srun -n 1 hvrun --topology -np 2" 0 'local rank 1 ' srun -n 1 hvrun --topology -np 2
if [ "$HAVE_CHECK" = 1 ]; then
  LIB_SHOW=1 lib_expect "srun --ntasks-per-node=4 hvrun --check" 0 'hvrun --check: 4 ranks on 1 node: PASSED' \
    srun --ntasks-per-node=4 hvrun --check
fi

# hvrun --status --slurm-job (issue 22): a step hangs (mpi_flight hang: rank 1 sleeps in
# user code while 0,2-3 wait for 'late'); each node's ranks are asked through
# `srun --overlap` and the verdict names rank 1. Then the refusals: a job that does not
# exist, a step it does not have, a job of another user (root submits one as nobody).
if [ -x tests/collectives/mpi_flight ]; then
  timeout --signal=KILL 60 srun --ntasks-per-node=4 hvrun tests/collectives/mpi_flight hang 40 > "$O.st" 2>&1 &
  SPID=$!
  NEVER="^verdict: rank 1 never submitted 'late'; its last submission was 'warmup' [0-9.]+ s ago and it has been in user code since$"
  sj=; st=
  for _ in $(seq 150); do
    sj=$(squeue -h -t R -o %i -n hvrun 2>/dev/null | head -1)
    [ -n "$sj" ] && st=$(timeout 30 hvrun --status --slurm-job "$sj" 2>&1) && printf '%s\n' "$st" | grep -Eq "$NEVER" && break
    sleep 0.2
  done
  printf '%s\n' "$st" | grep -Eq "$NEVER" && lib_ok "hvrun --status --slurm-job $sj: rank 1 never submitted 'late'" ||
    { lib_bad "hvrun --status --slurm-job '$sj':"; printf '%s\n' "$st" | sed 's/^/    | /'; tail -5 "$O.st"; }
  printf '%s\n' "$st" | grep -E '^(job|verdict)' | sed 's/^/    /'
  lib_expect "--status --slurm-job of a job that does not exist" 1 "^hvrun: error: Slurm job 99999 does not exist" \
    hvrun --status --slurm-job 99999
  [ -n "$sj" ] && lib_expect "--status --slurm-job of a step the job does not have" 1 "Slurm job $sj has no running step 7 \(its steps: $sj.0\)" \
    hvrun --status --slurm-job "$sj.7"
  if id nobody >/dev/null 2>&1; then
    oj=$(cd /tmp && timeout 30 sbatch --parsable --uid=nobody -o /dev/null --wrap "sleep 30" 2>/dev/null)
    [ -n "$oj" ] && lib_expect "--status --slurm-job of another user's job" 1 "Slurm job $oj belongs to nobody\(65534\), not to you" \
      hvrun --status --slurm-job "$oj"
    [ -n "$oj" ] && scancel "$oj" 2>/dev/null
  fi
  [ -n "$sj" ] && scancel "$sj" 2>/dev/null
  wait "$SPID" 2>/dev/null
fi

# a batch job: its script is not a task (SLURM_PROCID=0 but no step), so `hvrun -np 2`
# runs mpirun inside the allocation, and `srun hvrun` starts tasks as usual
cat > "$HV_SLURM_DIR/job.sh" <<JOB
#!/bin/bash
hvrun -np 2 tests/launch/launch_probe --expect-size 2
srun hvrun tests/launch/launch_probe --expect-size 2
JOB
t0=$(date +%s%N)
# (sbatch --wait polls every few seconds: watch squeue instead)
job=$(timeout 30 sbatch --parsable -n 2 -o "$O.4" "$HV_SLURM_DIR/job.sh" 2>&1)
for _ in $(seq 600); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.1; done
n_ompi=$(grep -c '^probe .*launcher=openmpi .* OK$' "$O.4" 2>/dev/null || true)
n_slurm=$(grep -c '^probe .*launcher=slurm .* OK$' "$O.4" 2>/dev/null || true)
[ "$n_ompi" = 2 ] && [ "$n_slurm" = 2 ] &&
  lib_ok "sbatch -n 2: hvrun -np 2 and srun hvrun inside the job ($(lib_ms "$t0") ms)" ||
  { lib_bad "sbatch job: $n_ompi/2 mpirun ranks, $n_slurm/2 srun ranks OK"; sed 's/^/    | /' "$O.4" | tail -15; }

# the card's command: cifar_ddp on tiny CIFAR-10 files, 4 ranks, 3 epochs
D=$HV_SLURM_DIR/cifar-data
mkdir -p "$D" && tests/cifar/make_tiny_cifar "$D" 32 32 >/dev/null || lib_bad "make_tiny_cifar"
CIFAR_ARGS="--dataset cifar10 --data-dir $D --batch-size 16 --train-size 64 --epochs 3 --lr-scaling none --base-lr 0.1 --no-augment"
t0=$(date +%s%N)
# shellcheck disable=SC2086
timeout --signal=KILL 120 srun --ntasks-per-node=4 hvrun workloads/cifar_ddp $CIFAR_ARGS \
  --results "$HV_SLURM_DIR/cifar-b" > "$O.5" 2>&1
lib_check_cifar "srun --ntasks-per-node=4 hvrun workloads/cifar_ddp ($(lib_ms "$t0") ms)" $? "$O.5" 4 1 "$HV_SLURM_DIR/cifar-b"

# hvrun --restarts inside a batch job (issue 21): hvrun runs mpirun in the allocation,
# rank 1 SIGKILLs itself, hvrun relaunches on the allocation's node and the job ends 0
cat > "$HV_SLURM_DIR/elastic.sh" <<JOB
#!/bin/bash
hvrun --restarts 1 -np 2 tests/elastic/elastic_worker --steps 60 --state $HV_SLURM_DIR/elastic.state --kill-rank 1 --kill-step 20
echo "elastic job exit \$?"
JOB
t0=$(date +%s%N)
job=$(timeout 30 sbatch --parsable -n 2 -o "$O.7" "$HV_SLURM_DIR/elastic.sh" 2>&1)
for _ in $(seq 900); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.1; done
grep -Eq '^hvrun: restart 1 of 1: lost rank 1 on host [^ ]+ \(killed by signal 9\); relaunching 2 ranks' "$O.7" &&
  grep -q '^DONE steps=60 restart=1 size=2$' "$O.7" && grep -q '^elastic job exit 0$' "$O.7" &&
  lib_ok "sbatch -n 2: hvrun --restarts 1 relaunched the job after a kill and it finished ($(lib_ms "$t0") ms)" ||
  { lib_bad "sbatch hvrun --restarts:"; grep -v '\] \[' "$O.7" | sed 's/^/    | /' | tail -30; }

# the same from an install prefix (cmake --install of the whole build)
PFX=$HV_SLURM_DIR/prefix
cmake --install "$B" --prefix "$PFX" >/dev/null 2>&1 || lib_bad "cmake --install $B --prefix $PFX"
cp tests/launch/launch_probe "$PFX/workloads/"
PFX_PATH="$PFX/bin:${PATH#$B/bin:}"
t0=$(date +%s%N)
(cd "$PFX" && PATH="$PFX_PATH" timeout --signal=KILL 60 \
  srun --ntasks-per-node=4 hvrun workloads/launch_probe --expect-size 4) > "$O.3" 2>&1
lib_check_probe "from the install prefix: srun --ntasks-per-node=4 hvrun workloads/launch_probe ($(lib_ms "$t0") ms)" "$O.3" 4 1
grep -q "$PFX/bin/hvrun" <(PATH="$PFX_PATH" command -v hvrun) && lib_ok "hvrun found in <prefix>/bin" ||
  lib_bad "hvrun not installed in $PFX/bin"
t0=$(date +%s%N)
# shellcheck disable=SC2086
(cd "$PFX" && PATH="$PFX_PATH" timeout --signal=KILL 120 \
  srun --ntasks-per-node=4 hvrun workloads/cifar_ddp $CIFAR_ARGS --results "$HV_SLURM_DIR/cifar-p") > "$O.6" 2>&1
lib_check_cifar "from the install prefix: srun --ntasks-per-node=4 hvrun workloads/cifar_ddp ($(lib_ms "$t0") ms)" $? \
  "$O.6" 4 1 "$HV_SLURM_DIR/cifar-p"

# a job still running at teardown (slurmstepd ignores SIGTERM): must not survive it
srun -n 2 hvrun /bin/sleep 300 >/dev/null 2>&1 & disown
for _ in $(seq 100); do [ -n "$(squeue -h -t R 2>/dev/null)" ] && break; sleep 0.1; done
[ -n "$(squeue -h -t R 2>/dev/null)" ] && echo "# a 2-task job is running: tearing down under it"

trap - EXIT
t0=$(date +%s%N); teardown
left=$(lib_cluster_procs "$HV_SLURM_DIR")
[ -z "$left" ] && lib_ok "teardown in $(lib_ms "$t0") ms: no daemon, step, task or srun left" || lib_bad "left behind: $left"
shm=$(lib_shm_leftovers "$SHM_BEFORE"); rm -f "$SHM_BEFORE"
[ -z "$shm" ] && lib_ok "no shared-memory segment left" || lib_bad "shared memory left in /dev/shm: $shm"
lib_summary
