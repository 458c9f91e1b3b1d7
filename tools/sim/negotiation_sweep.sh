#!/bin/sh
# negotiation_sweep.sh: hv's negotiation rounds at scale, simulated (negotiation_sim.c).
#   [ITERS=10] tools/sim/negotiation_sweep.sh [BUILD_SIM_DIR] [RANKS...]   (default: build-sim, 128 ... 8192)
# One simulation per rank count, one after another, on the 8,192-node fat tree (100 Gbit/s,
# 1 rank per node; -np N takes the first N nodes). Prints negotiation_sim's line plus the
# simulation's wall seconds and peak memory. Settings, and why:
#  - HV_SIM_SHARE_COMM=1: hv borrows MPI_COMM_WORLD instead of duplicating it (comm.c).
#    SMPI 3.32 sets up every new communicator with a ring allgather over all its ranks
#    (n simulated steps, n^2 messages to simulate): 4 communicators took 218 wall s at
#    1,024 ranks, and one would take hours at 8,192.
#  - smpi/allreduce:rdb: SMPI's Open MPI selection does the same ring set-up on the
#    first small MPI_Allreduce of MPI_COMM_WORLD; recursive doubling is what Open MPI
#    runs for an 8-byte allreduce, and it is the peer the table compares against.
#  - smpi/send-is-detached-thresh:0: SMPI 3.32 keeps every detached send (by default,
#    each one under 64 KiB) in one list of the simulator's and removes it by a linear
#    search when it completes; with n ranks sending at once that costs n^2 per step, and
#    it was most of the wall time (perf: 34% in that one loop at 512 ranks). Without
#    detached sends the simulated times are the same (steady round and allreduce equal
#    to the last digit at 512 and 1,024 ranks, the miss round within 0.2%) and 1,024
#    ranks run in 6 wall s instead of 18; 8,192 ranks fit in minutes.
# Needs vm.max_map_count >= 1048576 above 1,024 ranks (sysctl -w vm.max_map_count=1048576).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build-sim}
[ $# -gt 0 ] && shift
ranks=${*:-128 512 1024 2048 4096 8192}
for n in $ranks; do
  out=$( { HV_SIM_SHARE_COMM=1 /usr/bin/time -f "wall_s %e maxrss_kb %M" nice -n "${NICE:-19}" smpirun -np "$n" \
      -platform "$here/platforms/fattree-8192n-100g.xml" -hostfile "$here/platforms/hosts-8192n-1ppn.txt" \
      --cfg=smpi/simulate-computation:no --cfg=smpi/coll-selector:ompi --cfg=smpi/allreduce:rdb \
      --cfg=network/model:CM02 --cfg=smpi/display-timing:no --cfg=smpi/send-is-detached-thresh:0 \
      "$build/bin/negotiation_sim" "${ITERS:-10}"; } 2>&1 | grep -E '^ranks|^wall_s' | tr '\n' ' ')
  echo "$out"
done
