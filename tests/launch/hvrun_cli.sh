#!/bin/bash
# hvrun's command line without a cluster: --help, --topology (text, JSON, synthetic
# machines), --dry-run of the mpirun command, arguments passed untouched, and every
# error case: each gives its message and a non-zero exit, under a timeout.
# Usage: hvrun_cli.sh BUILD_DIR      (hvrun in BUILD_DIR/bin, probe in tests/launch)
set -u
B=$(cd "$1" && pwd); H=$(cd "$(dirname "$0")" && pwd)
. "$H/launch_lib.sh"
export PATH="$B/bin:$PATH"
# a clean slate: no launcher variables from whatever runs this test
for v in $(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\|HV\)_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
cd "$B"
P=tests/launch/launch_probe

echo "# modes"
lib_expect "--help" 0 'usage: hvrun .*PROGRAM' hvrun --help
lib_expect "--version" 0 '^hvrun \(hv\) [0-9]' hvrun --version
lib_expect "--topology" 0 '^  local rank 0 +: GPU' hvrun --topology
lib_expect "--topology -np 4 (this machine)" 0 'local rank 3 ' hvrun --topology -np 4
lib_expect "--topology synthetic 2 NUMA, 4 ranks" 0 'local rank 3 *: GPU none, NUMA 1, 2 cores, PUs 12-15' \
  env HV_TOPOLOGY_SOURCE="pack:2 numa:1 core:4 pu:2" hvrun --topology -np 4
lib_expect "--topology oversubscription warning" 0 'warning: 5 local ranks on 2 cores: oversubscribed' \
  env HV_TOPOLOGY_SOURCE="core:2 pu:1" hvrun --topology -np 5
if command -v python3 >/dev/null; then
  lib_expect "--topology --json parses, 4 bindings" 0 '^4$' sh -c \
    'hvrun --topology --json -np 4 | python3 -c "import json,sys; print(len(json.load(sys.stdin)[\"bindings\"]))"'
fi
lib_expect "--dry-run: mpirun line, no binding, oversubscribed demo" 0 \
  "mpi(run|exec) -np 4 --oversubscribe --bind-to none .*bin/hvrun $B/$P a 'b c'" hvrun -np 4 --dry-run $P a 'b c'
lib_expect "--dry-run with -H: no --oversubscribe" 0 '^[^ ]*mpi(run|exec) -np 2 --host n1:1,n2:1 --bind-to none ' \
  hvrun -np 2 -H n1:1,n2:1 --dry-run $P
lib_expect "--dry-run forwards HV_* and NCCL_*" 0 '-x HV_FUSION_THRESHOLD .*-x NCCL_DEBUG|-x NCCL_DEBUG .*-x HV_FUSION_THRESHOLD' \
  env HV_FUSION_THRESHOLD=1 NCCL_DEBUG=INFO hvrun -np 2 --dry-run $P
lib_expect "program arguments untouched" 0 '^-np 3 --weird a  b$' hvrun -np 1 /bin/echo -np 3 --weird 'a  b'
lib_expect "task --dry-run under fake Open MPI env" 0 'rank 1/2 local 1/2 .*exec tests/launch/launch_probe x|exec tests/launch/launch_probe x' \
  env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
  hvrun --dry-run $P x
X="xml:$H/gpu_2numa.xml"   # 2 NUMA nodes x 2 cores, one NVIDIA GPU on each
lib_expect "GPU machine (hwloc XML): rank 1 of 2 gets GPU 1 on NUMA 1" 0 'export CUDA_VISIBLE_DEVICES=1$' \
  env HV_TOPOLOGY_SOURCE="$X" OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=1 \
  OMPI_COMM_WORLD_LOCAL_SIZE=2 hvrun --dry-run $P
lib_expect "GPU machine: HV_NUMA_NODE and HV_CPUS of rank 1" 0 'export HV_CPUS=2-3' \
  env HV_TOPOLOGY_SOURCE="$X" OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=1 \
  OMPI_COMM_WORLD_LOCAL_SIZE=2 hvrun --dry-run $P
lib_expect "GPU machine: scheduler's CUDA_VISIBLE_DEVICES=GPU-a,GPU-b -> rank 1 keeps GPU-b" 0 'export CUDA_VISIBLE_DEVICES=GPU-b$' \
  env CUDA_VISIBLE_DEVICES=GPU-a,GPU-b HV_TOPOLOGY_SOURCE="$X" OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 \
  OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 hvrun --dry-run $P
lib_expect "GPU machine: Slurm gave GPU 1 only (renumbered 0): rank runs on its NUMA node 1" 0 'export HV_CPUS=2-3' \
  env CUDA_VISIBLE_DEVICES=0 SLURM_STEP_GPUS=1 HV_TOPOLOGY_SOURCE="$X" OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 \
  OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 hvrun --dry-run $P
lib_expect "GPU machine: Slurm gave GPU 1 only: CUDA_VISIBLE_DEVICES stays 0, HV_GPU=1" 0 'export HV_GPU=1' \
  env CUDA_VISIBLE_DEVICES=0 SLURM_STEP_GPUS=1 HV_TOPOLOGY_SOURCE="$X" OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 \
  OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 hvrun --dry-run $P
lib_expect "GPU machine: --topology lists GPUs with NUMA" 0 'GPU 1 +: cuda1 \(PCI 0000:65:00.0, 10de:2330\), NUMA 1' \
  env HV_TOPOLOGY_SOURCE="$X" hvrun --topology -np 4
lib_expect "user's OMP_NUM_THREADS wins" 0 'export OMP_NUM_THREADS=7$' \
  env OMP_NUM_THREADS=7 OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_LOCAL_RANK=0 \
  OMPI_COMM_WORLD_LOCAL_SIZE=1 hvrun --dry-run $P

echo "# errors"
lib_expect "no arguments" 2 'usage: hvrun' hvrun
lib_expect "unknown option" 2 "unknown option '--bogus'" hvrun --bogus $P
lib_expect "-np 0" 2 'must be at least 1' hvrun -np 0 $P
lib_expect "-np not a number" 2 "-np needs a number of ranks, got 'abc'" hvrun -np abc $P
lib_expect "-np without value" 2 'option -np needs a value' hvrun -np
lib_expect "no program" 2 'no program given' hvrun -np 2
lib_expect "program not found (path)" 127 "cannot run './no-such-program': No such file or directory" hvrun -np 2 ./no-such-program
lib_expect "program not found (PATH)" 127 "cannot run 'no-such-program-hv': not found on PATH" hvrun -np 2 no-such-program-hv
lib_expect "program not executable" 126 'not an executable file' hvrun -np 2 "$H/launch_lib.sh"
lib_expect "program is a directory" 126 'is a directory' hvrun -np 2 /tmp
lib_expect "-H with --hostfile" 2 'conflicting options: -H and --hostfile' hvrun -np 2 -H a:1 --hostfile f $P
lib_expect "-H without -np" 2 '-np N is missing: -H needs' hvrun -H a:2 $P
lib_expect "--topology with --check" 2 'conflicting options: --topology and --check' hvrun --topology --check
lib_expect "--json without --topology" 2 '--json goes with --topology' hvrun --json
lib_expect "no launcher, no -np" 2 'not started by srun or mpirun, and -np N is missing' hvrun $P
lib_expect "srun without PMIx" 1 'rank 0 on host .*without PMIx.*srun --mpi=pmix.*SLURM_MPI_TYPE=pmix' \
  env SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_STEP_ID=0 SLURM_NTASKS=1 SLURM_GTIDS=0 hvrun $P
lib_expect "-np inside a task" 2 'conflicting: -np 2 inside a task' \
  env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 hvrun -np 2 $P
lib_expect "task: program not found names rank and host" 127 "rank 3/4 \(local 1/2\) on host [^:]+: cannot run './nope'" \
  env OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 hvrun ./nope
lib_expect "inconsistent launcher variables" 1 'inconsistent launcher variables: rank 5 of 4' \
  env OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 hvrun $P
lib_expect "bad HV_BIND" 2 'HV_BIND=sideways: unknown binding mode' \
  env HV_BIND=sideways OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 hvrun $P
lib_expect "bad HV_TOPOLOGY_SOURCE" 1 'topology discovery failed: invalid hwloc synthetic description' \
  env HV_TOPOLOGY_SOURCE="banana:3" hvrun --topology
lib_expect "missing mpirun" 127 "mpirun \('/nonexistent/mpirun'\) not found" env HV_MPIRUN=/nonexistent/mpirun hvrun -np 2 $P
lib_summary
