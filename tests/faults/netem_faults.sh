#!/bin/bash
# netem_faults.sh BUILD_DIR [quick|full]: network faults between emulated nodes
# (tests/cluster/: network namespaces, Open MPI entering them through netns-rsh),
# 2 nodes x 2 ranks (issue 27). Every case is judged by exit statuses: mpirun's, and
# each rank's own (recorded by a wrapper into a per-rank file, since a cut-off node's
# output cannot reach mpirun).
#  1. lossy link: netem delay 35ms 15ms loss 1% on node 1's link, both directions
#     (every packet between the nodes crosses it once: 20-50 ms each way, 1% loss
#     each way), each program timed on the clean link first. quick: algo_test --quick
#     over MPI (every allreduce algorithm: ring, rd, rab, 2d, hier with and without
#     shared memory, mpi, the non-blocking ring; reduce-scatter, allgatherv,
#     alltoall, broadcast; exact values; about 40 s against 3 s clean); full (slow):
#     algo_test with every dtype, op and count, and mpi_collectives through the engine
#     (every collective, dtype and op; about 8 minutes against 10 s clean: each
#     negotiation round pays the link's round trips and TCP's loss recovery).
#     tests/cluster/netns-netem.sh applies it: here with its user-space relay (below).
#  2. partition: node 1's link goes down (its bridge port) once every rank has done
#     a few steps of faults_worker (named allreduces checked exactly) and stays down:
#     every rank, on both sides, must exit non-zero within HV_TIMEOUT + MARGIN_S,
#     after printing the hv line that says it waited longer than HV_TIMEOUT; at least
#     one rank on each side must name a rank of the other node in it. Open MPI's own
#     daemons cannot reach each other either, so mpirun only ends once the link is
#     back (it is restored when every rank has exited): mpirun must then exit non-zero.
#  3. flap: node 1's link goes down for 1 s and comes back while faults_worker runs
#     (--steps: a fixed number of steps, every sum exact, then exit 0): mpirun and
#     every rank exit 0, and every rank ends after the link came back.
# Exit 77 (skipped) without root or network namespaces. Teardown leaves nothing behind.
# Env: HV_NS / HV_NS_NET (default hvnf / 10.88.0), NETEM_TIMEOUT (HV_TIMEOUT of the
# partition case, 5), MARGIN_S (3).
set -u
B=$(cd "$1" && pwd); MODE=${2:-quick}
H=$(cd "$(dirname "$0")" && pwd); C=$(cd "$H/../cluster" && pwd)
. "$H/../launch/launch_lib.sh"
lib_need_root_tools ip nsenter unshare tc bridge
ip netns add hvprobe$$ 2>/dev/null && ip netns del hvprobe$$ || { echo "SKIP: cannot create network namespaces"; exit 77; }
for v in $(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\)_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export HV_NS=${HV_NS:-hvnf} HV_NS_NET=${HV_NS_NET:-10.88.0}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HV_NETEM_RELAY=${HV_NETEM_RELAY:-$B/tests/faults/netem_relay}
# The relay by default, where TAP devices exist, even on kernels with sch_netem: it drops
# and delays Ethernet frames as a NIC would, whereas netem on a veth (which offloads
# segmentation) drops whole GSO packets of up to 64 KiB, and this way every kernel runs
# the case that was measured.
# HV_NETEM_RELAY_FORCE=0 takes tc netem where the kernel has it.
[ -c /dev/net/tun ] && export HV_NETEM_RELAY_FORCE=${HV_NETEM_RELAY_FORCE:-1}
TO=${NETEM_TIMEOUT:-5}; MARGIN_S=${MARGIN_S:-3}
W=$(mktemp -d /tmp/hv-netem.XXXXXX)
teardown() { "$C/netns-down.sh" >/dev/null 2>&1; rm -f /run/hv-netem-"$HV_NS"-n*; rm -rf "$W"; }
# (the trap only once the nodes are ours: a cluster of the same HV_NS is someone else's)
"$C/netns-up.sh" 2 || { echo "FAIL - netns-up.sh (HV_NS=$HV_NS HV_NS_NET=$HV_NS_NET)"; rm -rf "$W"; exit 1; }
trap teardown EXIT
N0=${HV_NS}n0; N1=${HV_NS}n1; FAB=${HV_NS}fab; HOSTS=$N0:2,$N1:2
T=$B/tests/collectives/mpi_collectives; FW=$B/tests/faults/faults_worker
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# 1. Lossy link: the programs, each run on the clean link first for its time.
#   algo_test: every algorithm and collective alone (no engine), exact values;
#   mpi_collectives: through the engine (negotiation, fusion), every collective.
A=$B/tests/algo/algo_test
if [ "$MODE" = full ]; then
  cases=("algo_test|$A --transport mpi --per-node 2" "mpi_collectives auto|$T --algos=auto")
else
  cases=("algo_test --quick|$A --transport mpi --per-node 2 --quick")
fi
declare -A clean_ms
lossy() {  # lossy clean|lossy: every case; its time (and against the clean link's)
  local c name cmd t0 out rc ms vs
  for c in "${cases[@]}"; do
    name=${c%%|*}; cmd=${c#*|}
    t0=$(date +%s%N)
    out=$(timeout --signal=KILL 1500 "$C/netns-mpirun" "$HOSTS" 4 HV_TIMEOUT=120 -- $cmd 2>&1); rc=$?
    ms=$(ms_since "$t0")
    if [ "$1" = clean ]; then clean_ms[$name]=$ms; vs=; else vs=", clean link ${clean_ms[$name]} ms"; fi
    if [ $rc = 0 ]; then lib_ok "$1 link: $name: exact values ($ms ms$vs)"
    else lib_bad "$1 link: $name: rc $rc after $ms ms"; printf '%s\n' "$out" | tail -20 | sed 's/^/    | /'; fi
  done
}
lossy clean
"$C/netns-netem.sh" 1 delay 35ms 15ms loss 1% || lib_bad "netns-netem.sh 1 delay 35ms 15ms loss 1%"
lossy "lossy (35ms +-15ms, 1%)"
"$C/netns-netem.sh" 1 off || lib_bad "netns-netem.sh 1 off"

# faults_worker under mpirun, each rank's output and exit status in $W/$1/rank.R:
# start_worker DIR HV_TIMEOUT ARGS...; sets LP (the launcher's pid).
start_worker() {
  local d=$W/$1; mkdir -p "$d"
  timeout --signal=KILL 120 "$C/netns-mpirun" "$HOSTS" 4 HV_TIMEOUT="$2" -- bash -c \
    'exec > "$0/rank.$OMPI_COMM_WORLD_RANK" 2>&1; "$1" "${@:2}"; rc=$?; echo "EXIT rc=$rc at=$(date +%s%N)"; exit $rc' \
    "$d" "$FW" "${@:3}" > "$d/mpirun" 2>&1 &
  LP=$!
  local _; for _ in $(seq 600); do
    [ "$(cat "$d"/rank.* 2>/dev/null | grep -c '^READY ')" -ge 4 ] && return 0
    kill -0 "$LP" 2>/dev/null || break; sleep 0.1
  done
  return 1
}
rank_exit() { sed -n 's/^EXIT rc=\([0-9]*\) .*/\1/p' "$W/$1/rank.$2" 2>/dev/null; }
rank_at() { sed -n 's/^EXIT rc=[0-9]* at=\([0-9]*\)/\1/p' "$W/$1/rank.$2" 2>/dev/null; }
rank_host() { sed -n 's/^READY .*host=\([^ ]*\).*/\1/p' "$W/$1/rank.$2" 2>/dev/null; }

# 2. Partition: node 1 cut off for good.
if start_worker part "$TO" --seconds 100; then
  t0=$(date +%s%N)
  ip -n "$FAB" link set p1 down
  limit_ms=$(( (TO + MARGIN_S) * 1000 ))
  for _ in $(seq $(( (TO + MARGIN_S + 10) * 10 ))); do
    n=0; for r in 0 1 2 3; do [ -n "$(rank_exit part $r)" ] && n=$((n + 1)); done
    [ $n = 4 ] && break; sleep 0.1
  done
  ip -n "$FAB" link set p1 up
  wait "$LP"; mrc=$?
  [ $mrc != 0 ] && lib_ok "partition: mpirun exits $mrc once the link is back ($(ms_since "$t0") ms after the cut)" ||
    lib_bad "partition: mpirun exited 0"
  for r in 0 1 2 3; do
    rc=$(rank_exit part $r); at=$(rank_at part $r); host=$(rank_host part $r)
    line=$(grep -m1 "^\[hv rank $r\] error:" "$W/part/rank.$r" | cut -c1-400)
    took=; [ -n "$at" ] && took=$(( (at - t0) / 1000000 ))
    if [ -z "$rc" ]; then lib_bad "partition: rank $r ($host) did not exit within $((TO + MARGIN_S + 10)) s"
    elif [ "$rc" = 0 ]; then lib_bad "partition: rank $r ($host) exited 0"
    elif [ "$took" -gt "$limit_ms" ]; then lib_bad "partition: rank $r ($host) exited $rc after $took ms > HV_TIMEOUT + $MARGIN_S s"
    elif ! printf '%s' "$line" | grep -q "HV_TIMEOUT=$TO"; then lib_bad "partition: rank $r ($host) printed no HV_TIMEOUT line: $(tail -3 "$W/part/rank.$r")"
    else lib_ok "partition: rank $r ($host) exited $rc after $took ms: $line"; fi
  done
  # Each side names a rank of the other node: the ranks that waited across the cut.
  for side in "$N0 $N1" "$N1 $N0"; do
    set -- $side
    named=0
    for r in 0 1 2 3; do
      [ "$(rank_host part $r)" = "$1" ] && grep "^\[hv rank $r\] error:" "$W/part/rank.$r" | grep -q "on host $2" && named=1
    done
    [ $named = 1 ] && lib_ok "partition: a rank on $1 names the unreachable node $2" ||
      lib_bad "partition: no rank on $1 names $2"
  done
else
  lib_bad "partition: faults_worker did not start: $(tail -5 "$W"/part/* 2>/dev/null)"; kill "$LP" 2>/dev/null; wait "$LP"
fi

# 3. Flap: node 1's link down for one second, mid-run.
if start_worker flap 30 --steps 100 --connect-all; then
  ip -n "$FAB" link set p1 down; sleep 1; ip -n "$FAB" link set p1 up
  up=$(date +%s%N)
  wait "$LP"; mrc=$?
  bad=; for r in 0 1 2 3; do
    [ "$(rank_exit flap $r)" = 0 ] || bad="$bad rank $r: $(tail -2 "$W/flap/rank.$r" | tr '\n' ' ');"
    [ "$(rank_at flap $r)" -gt "$up" ] 2>/dev/null || bad="$bad rank $r ended before the link came back (too few steps);"
  done
  if [ $mrc = 0 ] && [ -z "$bad" ]; then
    lib_ok "flap (1 s down): mpirun and every rank exit 0, every sum exact ($(grep -h ' steps, every sum exact' "$W"/flap/rank.0))"
  else
    lib_bad "flap: mpirun rc $mrc;$bad"; tail -20 "$W/flap/mpirun" | sed 's/^/    | /'
  fi
else
  lib_bad "flap: faults_worker did not start: $(tail -5 "$W"/flap/* 2>/dev/null)"; kill "$LP" 2>/dev/null; wait "$LP"
fi

trap - EXIT
teardown
ns=$(ip netns list | awk '{print $1}' | grep -E "^${HV_NS}(n[0-9]+|fab)$" || true)
[ -z "$ns" ] && lib_ok "no namespace left" || lib_bad "namespaces left: $ns"
hvshm=$(ls /dev/shm | grep '^hv-' || true)
[ -z "$hvshm" ] && lib_ok "no hv shared-memory segment left" || lib_bad "left in /dev/shm: $hvshm"
lib_summary
