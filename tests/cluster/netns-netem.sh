#!/bin/bash
# Impairs emulated node I's link in both directions with netem's delay, jitter and
# loss (netns-up.sh's nodes), or removes the impairment:
#   netns-netem.sh I delay 35ms 15ms loss 1%       netns-netem.sh I off
# With the kernel's sch_netem (Debian's kernels have it): tc netem on the node's eth0
# (egress) and on its bridge port (the node's ingress), any netem arguments. Without it
# (this project's build machine: "Specified qdisc kind is unknown"), or with
# HV_NETEM_RELAY_FORCE=1: the node's veth is replaced by two TAP devices joined by
# tests/cluster/netem_relay (path in HV_NETEM_RELAY; only delay D [J], loss P%, limit
# N), keeping the node's address and MAC; `off` puts the veth back. The relay lives in
# the bridge's namespace, so netns-down.sh ends it too. Prints which one it used.
# Env: HV_NS, HV_NS_NET as for netns-up.sh.
set -euo pipefail
I=$1; shift; P=${HV_NS:-hv}; NET=${HV_NS_NET:-10.77.0}; FAB=${P}fab; NS=${P}n$I
STATE=/run/hv-netem-$P-n$I
ip -n "$NS" link show eth0 >/dev/null

relay_stop() {
  local pid; pid=$(cat "$STATE.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$STATE.pid"
}

# Node I's link as netns-up.sh makes it (a veth from eth0 to bridge port pI), with MAC.
veth_make() {
  ip -n "$FAB" link add "p$I" type veth peer name eth0 netns "$NS"
  ip -n "$NS" link set eth0 address "$1"
  ip -n "$FAB" link set "p$I" master br0 up
  ip -n "$NS" addr add "$NET.$((I+1))/24" dev eth0
  ip -n "$NS" link set eth0 up
}

wait_forwarding() {
  for _ in $(seq 50); do
    bridge -n "$FAB" link show dev "p$I" 2>/dev/null | grep -q 'state forwarding' && return 0; sleep 0.1
  done
  echo "netns-netem: bridge port p$I of $FAB is not forwarding" >&2; return 1
}

mac=$(ip -n "$NS" link show eth0 | awk '/link\/ether/ {print $2}')
if [ "${1:-}" = off ]; then
  if [ -e "$STATE.pid" ]; then
    relay_stop
    ip -n "$NS" link del eth0 2>/dev/null || true
    veth_make "$mac"
    wait_forwarding
  else
    tc -n "$NS" qdisc del dev eth0 root 2>/dev/null || true
    tc -n "$FAB" qdisc del dev "p$I" root 2>/dev/null || true
  fi
  echo "netns-netem: node $NS: link restored" >&2
  exit 0
fi

if [ "${HV_NETEM_RELAY_FORCE:-0}" != 1 ] && [ ! -e "$STATE.pid" ] &&
   tc -n "$NS" qdisc replace dev eth0 root netem "$@" 2>/dev/null; then
  tc -n "$FAB" qdisc replace dev "p$I" root netem "$@"
  echo "netns-netem: node $NS: tc netem $* (both directions)" >&2
  exit 0
fi

RELAY=${HV_NETEM_RELAY:-$(dirname "$0")/netem_relay}
[ -x "$RELAY" ] || { echo "netns-netem: no sch_netem in this kernel and no relay at $RELAY (set HV_NETEM_RELAY)" >&2; exit 1; }
if [ -e "$STATE.pid" ]; then relay_stop    # its TAP devices go with it
else ip -n "$NS" link del eth0; fi         # the veth: takes bridge port pI with it
"$RELAY" "$NS" "$FAB" "p$I" "$@" > "$STATE.log" 2>&1 &
echo $! > "$STATE.pid"
for _ in $(seq 50); do grep -q '^ready' "$STATE.log" && break; kill -0 "$(cat "$STATE.pid")" 2>/dev/null || break; sleep 0.1; done
if ! grep -q '^ready' "$STATE.log"; then
  echo "netns-netem: the relay did not start: $(cat "$STATE.log")" >&2
  relay_stop; veth_make "$mac"; exit 1
fi
ip -n "$NS" link set eth0 address "$mac"
ip -n "$NS" addr add "$NET.$((I+1))/24" dev eth0
ip -n "$NS" link set eth0 up
ip -n "$FAB" link set "p$I" master br0 up
wait_forwarding
echo "netns-netem: node $NS: user-space relay (no sch_netem here) $* (both directions)" >&2
