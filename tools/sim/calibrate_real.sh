#!/bin/bash
# calibrate_real.sh BUILD_DIR [LAYOUTS="2x1 2x2 4x1 4x2"] [SIZES="1048576 4194304 16777216 67108864"]
#                   [ALGOS="ring rd hier mpi"] [REPS=3] [ITERS=5]
# Reference allreduce times on the emulated cluster (tests/cluster: one network namespace
# per node, tbf at RATE=1gbit on every node link, ranks of one node on shared memory), for
# the SimGrid calibration platforms tools/sim/platforms/netns-*.xml. The simulator has to
# match these within 15%.
#
# For each layout NODESxPPN, algorithm (HV_ALLREDUCE_ALGO=ring|rd|hier|mpi) and size, runs
# tests/collectives/allreduce_bytes REPS times (each run: ITERS float32 allreduces, ITERS*4
# below 16 MiB; the program checks every result and prints the median of its
# iterations). The repeats are interleaved (rep 1 of every case, then rep 2, ...) so that a
# burst of load elsewhere hits one repeat of many cases rather than all repeats of one.
# Prints CSV on stdout: nodes,ppn,algo,bytes,median_ms,min_ms,max_ms where median_ms is the
# median of the REPS per-run medians and min_ms/max_ms the smallest and largest of them.
# Comment lines (#) give the date, the machine, and before every series (one layout, one
# rep) the load average and the CPU busy share of the other 2 s: the machine has 2 cores,
# so the script waits (up to WAIT_MAX=120 s) for a quiet moment (busy < BUSY_MAX=25%)
# before each series, and says so if it had to go on anyway.
# Also measures point-to-point latency/bandwidth (tools/sim/pingpong.c, built here with
# mpicc) between two nodes and inside one node, as comment lines.
# Needs root, iproute2, Open MPI; tears the namespaces down on exit (also on error).
# Env: RATE (default 1gbit), HV_NS (default hvc), HV_NS_NET (default 10.86.0).
set -u
B=$(cd "${1:?usage: calibrate_real.sh BUILD_DIR [LAYOUTS] [SIZES] [ALGOS] [REPS] [ITERS]}" && pwd)
LAYOUTS=${2:-"2x1 2x2 4x1 4x2"}
SIZES=${3:-"1048576 4194304 16777216 67108864"}
ALGOS=${4:-"ring rd hier mpi"}
REPS=${5:-3}; ITERS=${6:-5}
RATE=${RATE:-1gbit}; BUSY_MAX=${BUSY_MAX:-25}; WAIT_MAX=${WAIT_MAX:-120}
HERE=$(cd "$(dirname "$0")" && pwd); C=$(cd "$HERE/../../tests/cluster" && pwd)
export HV_NS=${HV_NS:-hvc} HV_NS_NET=${HV_NS_NET:-10.86.0}
T=$B/tests/collectives/allreduce_bytes
[ -x "$T" ] || { echo "calibrate_real: no $T (cmake --build $B --target allreduce_bytes)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$B/sim" && mpicc -O2 -o "$B/sim/pingpong" "$HERE/pingpong.c" || exit 1
TMP=$(mktemp -d); UP=0
cleanup() { [ "$UP" = 0 ] || "$C/netns-down.sh" >/dev/null 2>&1; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

busy() { # CPU busy percent over 2 s (all cores), from /proc/stat, not counting niced work
  # (nice 19 work, such as a build or a simulation beside the measurement, yields the cores
  # to it); sets NICED to the niced share
  local a b; a=($(head -1 /proc/stat)); sleep 2; b=($(head -1 /proc/stat))
  local idle=$(( (b[4] + b[5]) - (a[4] + a[5]) )) niced=$(( b[2] - a[2] )) tot=0 i
  for i in 1 2 3 4 5 6 7 8; do tot=$(( tot + b[i] - a[i] )); done
  NICED=$(( tot > 0 ? 100 * niced / tot : 0 ))
  echo $(( tot > 0 ? 100 * (tot - idle - niced) / tot : 0 ))
}
quiet() { # wait for a quiet machine, then print a comment line saying how quiet it was
  local waited=0 u; busy >"$TMP/busy"; u=$(cat "$TMP/busy")
  while [ "$u" -ge "$BUSY_MAX" ] && [ "$waited" -lt "$WAIT_MAX" ]; do sleep 8; waited=$((waited + 10)); busy >"$TMP/busy"; u=$(cat "$TMP/busy"); done
  local note=; [ "$u" -lt "$BUSY_MAX" ] || note=" (NOT QUIET: went on after ${WAIT_MAX}s)"
  echo "# $1: $(date -u +%T) load average $(cut -d' ' -f1-3 /proc/loadavg), others' CPU busy ${u}% over 2 s (niced work ${NICED}% more), waited ${waited}s$note"
}
up() { # N: (re)build an N-node emulated cluster
  [ "$UP" = 0 ] || "$C/netns-down.sh" >/dev/null 2>&1
  UP=1; "$C/netns-up.sh" "$1" "$RATE" 2>/dev/null || { echo "calibrate_real: netns-up.sh $1 failed" >&2; exit 1; }
}
hosts() { # NODES PPN -> mpirun -H list
  local h= i; for i in $(seq 0 $(($1 - 1))); do h="$h${h:+,}${HV_NS}n$i:$2"; done; echo "$h"
}

echo "# calibrate_real.sh $(date -u '+%F %T') UTC on $(hostname), $(nproc) cores, $(uname -r), $(mpirun --version 2>/dev/null | head -1)"
echo "# emulated nodes: network namespaces on one bridge, tbf $RATE on each node link both directions; netns-mpirun (btl self,vader,tcp; vader single-copy none; btl_tcp_links 2; no binding)"
echo "# each case: $REPS runs of allreduce_bytes (float32, $ITERS iterations from 16 MiB up, $((ITERS * 4)) below); median_ms = median of the per-run medians, min/max = range of the per-run medians"

# point-to-point calibration numbers (comment lines)
up 2
quiet "pingpong series"
for pair in "${HV_NS}n0:1,${HV_NS}n1:1" "${HV_NS}n0:2"; do
  out=$(timeout --signal=KILL 300 "$C/netns-mpirun" "$pair" 2 -- "$B/sim/pingpong" 67108864 5 2>&1 | grep '^pingpong')
  echo "# $pair: ${out:-failed}"
done

declare -A RES
nodes_up=0
for rep in $(seq 1 "$REPS"); do
  for layout in $LAYOUTS; do
    n=${layout%x*}; ppn=${layout#*x}; np=$((n * ppn)); H=$(hosts "$n" "$ppn")
    [ "$nodes_up" = "$n" ] || { up "$n"; nodes_up=$n; }
    quiet "series ${n}x$ppn rep $rep"
    for algo in $ALGOS; do
      for bytes in $SIZES; do
        it=$ITERS; [ "$bytes" -ge 16777216 ] || it=$((ITERS * 4))
        out=$(timeout --signal=KILL 600 "$C/netns-mpirun" "$H" "$np" HV_ALLREDUCE_ALGO="$algo" -- \
          "$T" "$bytes" "$it" 2>&1)
        ms=$(sed -n 's/.*median \([0-9.]*\) ms.*results correct/\1/p' <<<"$out")
        echo "calibrate_real: $(date -u +%T) ${n}x$ppn $algo $bytes rep $rep: ${ms:-FAILED} ms" >&2
        if [ -z "$ms" ]; then
          echo "# FAILED ${n}x$ppn $algo $bytes rep $rep: $(tail -2 <<<"$out" | tr '\n' ' ')"
        else
          RES[$n,$ppn,$algo,$bytes]="${RES[$n,$ppn,$algo,$bytes]:-} $ms"
        fi
      done
    done
  done
done
quiet "end"
echo "nodes,ppn,algo,bytes,median_ms,min_ms,max_ms"
for layout in $LAYOUTS; do
  n=${layout%x*}; ppn=${layout#*x}
  for algo in $ALGOS; do
    for bytes in $SIZES; do
      v=${RES[$n,$ppn,$algo,$bytes]:-}
      [ -n "$v" ] || { echo "$n,$ppn,$algo,$bytes,,,"; continue; }
      tr ' ' '\n' <<<"$v" | grep . | sort -g | awk -v p="$n,$ppn,$algo,$bytes" \
        '{ x[NR] = $1 } END { m = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2;
           printf "%s,%.1f,%.1f,%.1f\n", p, m, x[1], x[NR] }'
    done
  done
done
