#!/bin/bash
# hier_netns_bench.sh BUILD_DIR [RATE=1gbit] [BYTES=67108864] [ITERS=5]: allreduce time
# on emulated nodes (tests/cluster/: network namespaces, tbf at RATE on every node
# link), flat ring vs hierarchical (with and without fp16) vs auto vs the MPI library's own
# allreduce, on 2 nodes x 2 ranks and 2 nodes x 1 rank, in one run. Prints the median
# of ITERS allreduces per case (tests/collectives/allreduce_bytes) and each one's
# speed-up over the flat ring. A benchmark, not a test: run it on an idle machine.
# Needs root; tears the nodes down on exit.
set -u
B=$(cd "$1" && pwd); RATE=${2:-1gbit}; BYTES=${3:-67108864}; ITERS=${4:-5}
C=$(cd "$(dirname "$0")/../cluster" && pwd)
export HV_NS=${HV_NS:-hvb} HV_NS_NET=${HV_NS_NET:-10.85.0}
trap '"$C/netns-down.sh" >/dev/null 2>&1' EXIT
"$C/netns-up.sh" 2 "$RATE" || exit 1
T=$B/tests/collectives
echo "# $(date -u +%F) $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), node links $RATE, $BYTES bytes, median of $ITERS"
for layout in "${HV_NS}n0:2,${HV_NS}n1:2 4" "${HV_NS}n0:1,${HV_NS}n1:1 2"; do
  set -- $layout
  ring=
  for run in "ring none" "hier none" "hier fp16" "ring fp16" "auto none" "auto fp16" "mpi none"; do
    set -- $layout $run
    ms=$(timeout --signal=KILL 600 "$C/netns-mpirun" "$1" "$2" HV_ALLREDUCE_ALGO="$3" -- \
      "$T/allreduce_bytes" "$BYTES" "$ITERS" "$4" 2>&1 | sed -n 's/.*median \([0-9.]*\) ms.*results correct/\1/p')
    [ -n "$ms" ] || { echo "$1 $3 $4: failed"; continue; }
    [ -z "$ring" ] && ring=$ms
    printf '%-22s np=%s algo=%-4s compression=%-4s %9.1f ms  %5.2fx the flat ring\n' "$1" "$2" "$3" "$4" "$ms" \
      "$(awk -v a="$ring" -v b="$ms" 'BEGIN { print a / b }')"
  done
done
