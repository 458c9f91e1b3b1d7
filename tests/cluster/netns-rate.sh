#!/bin/bash
# Sets (RATE=off: removes) a tbf bandwidth limit on every emulated node link, both
# directions: the node's eth0 (egress) and its bridge port (the node's ingress).
# Usage: netns-rate.sh N RATE|off      e.g. netns-rate.sh 2 1gbit
# (latency, jitter and loss: netns-netem.sh, with netem or its user-space relay.)
set -euo pipefail
N=$1; RATE=$2; P=${HV_NS:-hv}; FAB=${P}fab
for i in $(seq 0 $((N-1))); do
  for dev in "${P}n$i eth0" "$FAB p$i"; do
    set -- $dev
    ip -n "$1" link show "$2" >/dev/null
    tc -n "$1" qdisc del dev "$2" root 2>/dev/null || true
    [ "$RATE" = off ] || tc -n "$1" qdisc add dev "$2" root tbf rate "$RATE" burst 256kb latency 20ms
  done
done
