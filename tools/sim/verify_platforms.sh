#!/bin/bash
# verify_platforms.sh [OUT=build/sim]: checks that every platform in tools/sim/platforms
# loads under SMPI and runs a collective, and prints simulated times and wall seconds:
#  - every fat tree (16/128/1024 nodes x 25/100/400 Gbit/s) at 1 rank per node, a 4 MiB
#    MPI_Allreduce (ompi selector); 16 nodes also at 4 and 8 ranks per node;
#  - 1,024 nodes x 100 Gbit/s at 1,024 ranks: 4 KiB and 4 MiB (ompi selector);
#  - full bisection: 128 nodes x 100 Gbit/s, 16 and 64 MiB with allreduce rab1 (Rabenseifner:
#    recursive-halving reduce-scatter + recursive-doubling allgather, whose partners at
#    distance 64, 32, 16 sit on other leaf switches) against 2(n-1)/n * S / B;
#  - the netns calibration platforms (full and half duplex): pingpong (latency, one-way and
#    bidirectional 64 MiB) and a 64 MiB allreduce (ompi selector) at 2x1, 2x2, 4x1, 4x2.
# All runs: --cfg=smpi/simulate-computation:no (pure network model). Fat trees run SMPI's
# default network model (network/model:SMPI, with its bandwidth/latency correction
# factors), the netns platforms network/model:CM02 (no factors: the XML numbers are the
# measured effective ones). Builds the two test programs with smpicc into OUT.
set -u
cd "$(dirname "$0")/../.." || exit 1
O=${1:-build/sim}; P=tools/sim/platforms
mkdir -p "$O"
smpicc -O2 -o "$O/ping_allreduce" tools/sim/ping_allreduce.c || exit 1
smpicc -O2 -o "$O/pingpong-smpi" tools/sim/pingpong.c || exit 1
Q="--cfg=smpi/simulate-computation:no"
sim() { # NP PLATFORM HOSTFILE CFG... -- PROG ARGS: prints the program's line + wall seconds
  local np=$1 pl=$2 hf=$3; shift 3
  local cfg=(); while [ "$1" != "--" ]; do cfg+=("$1"); shift; done; shift
  local t0 t1 out; t0=$(date +%s.%N)
  out=$(smpirun -np "$np" -platform "$P/$pl" -hostfile "$P/$hf" $Q "${cfg[@]}" "$@" 2>&1)
  t1=$(date +%s.%N)
  printf '%-26s %-24s np=%-5s %s  [wall %.1f s]\n' "$pl" "${cfg[*]:-default}" "$np" \
    "$(grep -E '^(ping_allreduce|pingpong)' <<<"$out" | sed 's/^ping_allreduce: //' || echo FAILED)" \
    "$(echo "$t1 - $t0" | bc)"
}
echo "# verify_platforms.sh $(date -u '+%F %T') UTC, $(smpirun -version 2>/dev/null | head -1), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for n in 16 128 1024; do
  for g in 25 100 400; do sim "$n" "fattree-${n}n-${g}g.xml" "hosts-${n}n-1ppn.txt" --cfg=smpi/coll-selector:ompi -- "$O/ping_allreduce" 1048576; done
done
sim 16 fattree-16n-100g.xml hosts-16n-1ppn.txt -- "$O/ping_allreduce" 1048576   # SMPI's default selector
for ppn in 4 8; do
  sim $((16 * ppn)) fattree-16n-100g.xml "hosts-16n-${ppn}ppn.txt" --cfg=smpi/coll-selector:ompi -- "$O/ping_allreduce" 1048576
done
for n in 1024 1048576; do
  sim 1024 fattree-1024n-100g.xml hosts-1024n-1ppn.txt --cfg=smpi/coll-selector:ompi -- "$O/ping_allreduce" "$n"
done
# Memory: SMPI gives every rank real buffers; 128 ranks x 64 MiB (+ the algorithm's
# temporaries) is ~16 GB, so 64 MiB runs with smpi/auto-shared-malloc-thresh (the ranks
# share one user buffer; results unchecked) and 16 MiB runs with real, checked buffers.
for mib in 16 64; do
  echo "# full bisection: 128 nodes, 100 Gbit/s, $mib MiB; ideal 2(n-1)/n*S/B = $(awk -v m=$mib 'BEGIN { printf "%.3f", 2 * 127 / 128 * m * 1048576 / 12.5e9 * 1e3 }') ms"
  shm=(); chk=; [ "$mib" = 16 ] || { shm=(--cfg=smpi/auto-shared-malloc-thresh:65536); chk=nocheck; }
  for a in rab1 rab_rdb ompi_ring_segmented lr; do
    sim 128 fattree-128n-100g.xml hosts-128n-1ppn.txt --cfg=smpi/allreduce:$a "${shm[@]}" -- "$O/ping_allreduce" $((mib * 262144)) 1 $chk
  done
  sim 128 fattree-128n-100g.xml hosts-128n-1ppn.txt --cfg=smpi/allreduce:rab1 --cfg=network/model:CM02 "${shm[@]}" -- "$O/ping_allreduce" $((mib * 262144)) 1 $chk
done
echo "# netns calibration platforms (network/model:CM02)"
for v in "" -half; do
  sim 2 netns-2n-1g$v.xml hosts-netns-2n-1ppn.txt --cfg=network/model:CM02 -- "$O/pingpong-smpi" 67108864 1
done
sim 2 netns-2n-1g.xml hosts-netns-2n-2ppn.txt --cfg=network/model:CM02 -- "$O/pingpong-smpi" 67108864 1
for l in 2x1 2x2 4x1 4x2; do
  n=${l%x*} ppn=${l#*x}
  for v in "" -half; do
    sim $((n * ppn)) "netns-${n}n-1g$v.xml" "hosts-netns-${n}n-${ppn}ppn.txt" --cfg=network/model:CM02 --cfg=smpi/coll-selector:ompi -- "$O/ping_allreduce" 16777216
  done
done
