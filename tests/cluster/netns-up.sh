#!/bin/bash
# Emulates N cluster nodes on this machine: one network namespace per node, joined by
# a Linux bridge that lives in a namespace of its own (the root namespace is never
# touched). Node i is namespace ${HV_NS}n$i with eth0 = ${HV_NS_NET}.$((i+1))/24.
# Usage: netns-up.sh [N=2] [RATE]      RATE (e.g. 1gbit): tbf on both link directions
# Env:   HV_NS (name prefix, default hv), HV_NS_NET (first 3 octets, default 10.77.0)
# Needs root and iproute2. Undo with netns-down.sh.
set -euo pipefail
N=${1:-2}; RATE=${2:-}; P=${HV_NS:-hv}; NET=${HV_NS_NET:-10.77.0}; FAB=${P}fab
if ip netns list | awk '{print $1}' | grep -qx "$FAB"; then
  echo "netns-up: namespace $FAB exists already (another cluster with HV_NS=$P? run netns-down.sh)" >&2
  exit 1
fi
ip netns add "$FAB"
ip -n "$FAB" link set lo up
ip -n "$FAB" link add br0 type bridge
ip -n "$FAB" link set br0 up
for i in $(seq 0 $((N-1))); do
  ns=${P}n$i
  ip netns add "$ns"
  # lo must be up: srun --mpi=pmix tasks reach their node's PMIx server on 127.0.0.1
  ip -n "$ns" link set lo up
  ip -n "$FAB" link add "p$i" type veth peer name eth0 netns "$ns"
  ip -n "$FAB" link set "p$i" master br0 up
  ip -n "$ns" addr add "$NET.$((i+1))/24" dev eth0
  ip -n "$ns" link set eth0 up
done
[ -z "$RATE" ] || "$(dirname "$0")/netns-rate.sh" "$N" "$RATE"
# bridge ports forward at once with STP off; wait anyway rather than race the first job
for _ in $(seq 50); do
  [ "$(bridge -n "$FAB" link show | grep -c 'state forwarding')" -ge "$N" ] && break; sleep 0.1
done
echo "netns-up: $N nodes ${P}n0..${P}n$((N-1)) at $NET.1..$NET.$N${RATE:+, rate $RATE}" >&2
