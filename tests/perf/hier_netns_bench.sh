#!/bin/bash
# hier_netns_bench.sh BUILD_DIR [RATE=1gbit] [BYTES=67108864] [ITERS=5] [REPS=3]: allreduce
# time on emulated nodes (tests/cluster/: network namespaces, tbf at RATE on every node
# link), flat ring vs hierarchical vs auto vs Rabenseifner's vs recursive doubling vs the
# MPI library's own allreduce (and ring, hierarchical and auto with fp16), on 2 nodes x 2
# ranks and 2 nodes x 1 rank.
# The algorithms are compared within one launch (tests/collectives/allreduce_bytes with an
# algorithm list: one communicator each, iterations interleaved): Open MPI's TCP transport
# lands in a fast or a slow mode per launch, and a busy machine has slow spells, so
# separate launches per algorithm compare launches as much as algorithms (2026-11-27:
# "auto 704 ms, hier 589 ms" came from two launches running the same hierarchical
# code). REPS launches per layout; each row gives every launch's median of ITERS
# allreduces, their median, and its ratio to the flat ring's. A benchmark, not a test:
# run it on an idle machine. Needs root; tears the nodes down on exit.
set -u
B=$(cd "$1" && pwd); RATE=${2:-1gbit}; BYTES=${3:-67108864}; ITERS=${4:-5}; REPS=${5:-3}
C=$(cd "$(dirname "$0")/../cluster" && pwd)
export HV_NS=${HV_NS:-hvb} HV_NS_NET=${HV_NS_NET:-10.85.0}
"$C/netns-up.sh" 2 "$RATE" || exit 1
trap '"$C/netns-down.sh" >/dev/null 2>&1' EXIT
T=$B/tests/collectives
echo "# $(date -u +%F) $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), node links $RATE, $BYTES bytes," \
  "median of $ITERS per launch, $REPS launches"
med() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : ""}'; }
for layout in "${HV_NS}n0:2,${HV_NS}n1:2 4" "${HV_NS}n0:1,${HV_NS}n1:1 2"; do
  set -- $layout
  declare -A ms=()
  for rep in $(seq "$REPS"); do
    for run in "none ring,hier,auto,rab,rd,mpi" "fp16 ring,hier,auto"; do
      set -- $layout $run
      out=$(timeout --signal=KILL 900 "$C/netns-mpirun" "$1" "$2" -- "$T/allreduce_bytes" "$BYTES" "$ITERS" "$3" "$4" 2>&1)
      while read -r algo t; do ms[$algo.$3]="${ms[$algo.$3]:-} $t"; done < <(printf '%s\n' "$out" |
        sed -n 's/.*algo \([a-z0-9]*\), compression [a-z0-9]*: median \([0-9.]*\) ms.*results correct/\1 \2/p')
      printf '%s\n' "$out" | grep -q "WRONG\|rror" && echo "$1 $3 launch $rep: $(printf '%s\n' "$out" | tail -3)"
    done
  done
  set -- $layout
  ring=$(echo "${ms[ring.none]:-}" | med)
  for key in ring.none hier.none auto.none rab.none rd.none mpi.none ring.fp16 hier.fp16 auto.fp16; do
    m=$(echo "${ms[$key]:-}" | med)
    [ -n "$m" ] || { echo "$1 ${key%.*} ${key#*.}: failed"; continue; }
    printf '%-22s np=%s algo=%-4s compression=%-4s %9.1f ms  %5.2fx the flat ring  (launches:%s)\n' "$1" "$2" \
      "${key%.*}" "${key#*.}" "$m" "$(awk -v a="$ring" -v b="$m" 'BEGIN { print a / b }')" "${ms[$key]}"
  done
  unset ms
done
