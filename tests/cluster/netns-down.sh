#!/bin/bash
# Removes the namespaces made by netns-up.sh (the veth pairs and the bridge go with
# them). A namespace outlives its name while a process is inside, so processes still
# in our namespaces (only ours can be there) are killed first.
# Env: HV_NS (name prefix, default hv).
P=${HV_NS:-hv}
nss=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${P}(n[0-9]+|fab)$" || true)
for ns in $nss; do
  pids=$(ip netns pids "$ns" 2>/dev/null)
  [ -z "$pids" ] || { echo "netns-down: killing leftover pids in $ns: $pids" >&2; kill -9 $pids 2>/dev/null || true; }
done
for ns in $nss; do ip netns del "$ns"; done
exit 0
