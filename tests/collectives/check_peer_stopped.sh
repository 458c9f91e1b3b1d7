#!/bin/sh
# check_peer_stopped.sh MPIRUN_CMD...: runs mpi_peer_stopped, which must end by itself
# (not by the outer timeout) with every surviving rank reporting the stopped peer.
out=$(timeout --signal=KILL 60 "$@" 2>&1)
status=$?
printf '%s\n' "$out"
if [ $status -eq 137 ] || [ $status -eq 124 ]; then
  echo "check_peer_stopped: the job hung until the outer timeout" >&2
  exit 1
fi
expected=$(( ${HV_TEST_NP:-2} - 1 ))
found=$(printf '%s\n' "$out" | grep -c "PEER-STOPPED-DETECTED")
if [ "$found" -lt 1 ] || [ "$found" -gt "$expected" ]; then
  echo "check_peer_stopped: $found of $expected surviving ranks reported the stopped peer" >&2
  exit 1
fi
# The rank that talks to the stopped one names it (others may name a rank that is
# itself stuck waiting).
if ! printf '%s\n' "$out" | grep -q "with rank $expected on host "; then
  echo "check_peer_stopped: no rank named the stopped rank $expected and its host" >&2
  exit 1
fi
echo "check_peer_stopped: $found rank(s) detected the stopped peer; mpirun exited with $status"
