#!/bin/bash
# fusion_netns_bench.sh BUILD_DIR [RATE=10gbit] [RUNS=3]: 256 x 4 KiB allreduces fused
# through the engine against 256 separate MPI_Allreduce calls, on 2 emulated nodes x 1
# rank (tests/cluster/: network namespaces, tbf at RATE on each node's link), where
# every MPI call pays a TCP round trip instead of a shared-memory one. Prints hvbench's
# row of each and the ratio, RUNS times. A benchmark, not a test; needs root; tears the
# nodes down on exit.
set -u
B=$(cd "$1" && pwd); RATE=${2:-10gbit}; RUNS=${3:-3}
C=$(cd "$(dirname "$0")/../cluster" && pwd)
export HV_NS=${HV_NS:-hvf} HV_NS_NET=${HV_NS_NET:-10.86.0}
trap '"$C/netns-down.sh" >/dev/null 2>&1' EXIT
"$C/netns-up.sh" 2 "$RATE" || exit 1
echo "# $(date -u +%F) $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), node links $RATE"
for run in $(seq "$RUNS"); do
  timeout --signal=KILL 300 "$C/netns-mpirun" "${HV_NS}n0:1,${HV_NS}n1:1" 2 -- \
    "$B/bin/hvbench" allreduce --tensors 256 -b 4K -e 4K --algo auto -n 100 -w 10 2>&1 |
    awk '/^# hv:|^# mpi:/ { name = $2 } /^ +4096 +1024/ { t[name] = $6 }
         END { printf "run %d: hv (fused) %.0f us, MPI (256 calls) %.0f us, %.2fx\n", '"$run"', t["hv:auto:"], t["mpi:"], t["mpi:"] / t["hv:auto:"] }'
done
