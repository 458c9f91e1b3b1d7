#!/bin/sh
# shm_fallback.sh MODE MPIRUN [MPIRUN_ARGS...] -- MPI_COLLECTIVES: hv without the node's
# shared memory must fall back to MPI, complete every collective with exact values,
# and say so: one warning per node and communicator, at the default log level, naming
# the sizes and the fixes (or, with HV_SHM_SLOT_BYTES=0, no warning at all).
#
#   small   /dev/shm of 1 MiB, 4 ranks on one node: the 16 MiB region does not fit
#           (before posix_fallocate, ranks died of SIGBUS at their first write past
#           1 MiB: the 64 MiB allreduce of --large)
#   split   /dev/shm of 1.5 MiB, 2 emulated nodes x 2 ranks, 512 KiB slots: one node's
#           1 MiB region fits, the other's does not, and both must do without
#           (a node with shared memory and one without deadlocked the hierarchical
#           allreduce)
#   ro      a read-only /dev/shm: the region cannot even be created (EROFS); with
#           HV_ALLREDUCE_ALGO=shm, which then runs the ring
#   slot0   HV_SHM_SLOT_BYTES=0 on the real /dev/shm, 2 emulated nodes x 2 ranks: MPI
#           carries the node phases, hv says why when asked, and warns of nothing;
#           with HV_ALLREDUCE_ALGO=shm as well, hv_init refuses the contradiction
#
# The first three mount a tmpfs over /dev/shm in a private mount namespace (unshare
# -m), never touching the machine's; where that is not permitted they skip (77).
# Open MPI's own shared-memory files go to /tmp, so MPI still runs. (mpi_collectives'
# --algos=NAME@SIZE runs algorithm NAME with HV_SHM_SLOT_BYTES=SIZE.)
set -u
mode=$1
shift
out=$(mktemp)
trace=$(mktemp -d)
trap 'rm -rf "$out" "$trace"' EXIT
export OMPI_MCA_btl_vader_backing_directory=/tmp

# Runs "$@" with /dev/shm replaced by a tmpfs mounted with $1's options.
in_small_devshm() {
  opts=$1
  shift
  if ! unshare -m sh -c "mount -t tmpfs -o $opts tmpfs /dev/shm" 2>/dev/null; then
    echo "shm_fallback: SKIP: cannot mount a tmpfs in a private mount namespace (needs root or CAP_SYS_ADMIN)"
    exit 77
  fi
  unshare -m sh -c 'mount -t tmpfs -o "$0" tmpfs /dev/shm && exec "$@"' "$opts" "$@"
}

# expect_warnings N REGEX...: exactly N warning lines about shared memory, each
# matching every REGEX.
expect_warnings() {
  want=$1
  shift
  got=$(grep -c 'warning: no shared memory' "$out")
  if [ "$got" -ne "$want" ]; then
    echo "shm_fallback: expected $want shared-memory warnings (one per node and communicator), found $got" >&2
    exit 1
  fi
  for re in "$@"; do
    n=$(grep 'warning: no shared memory' "$out" | grep -cE -- "$re")
    [ "$n" -eq "$want" ] || { echo "shm_fallback: $n of $want warnings match: $re" >&2; exit 1; }
  done
}

run() {
  "$@" >"$out" 2>&1
  status=$?
  cat "$out"
  if [ $status -ne 0 ]; then
    echo "shm_fallback: $mode: exited with status $status" >&2
    exit 1
  fi
}

fixes='docker run --shm-size.*HV_SHM_SLOT_BYTES'
case $mode in
small)
  HV_TIMELINE="$trace/t.json" run in_small_devshm size=1m "$@" --algos=auto --large --shm=off
  expect_warnings 1 'needs 16\.0 MiB \(4 local ranks x HV_SHM_SLOT_BYTES=4\.0 MiB\), 1\.0 MiB is free' "$fixes"
  # The timeline names what ran: recursive doubling and Rabenseifner's, never shm.
  python3 - "$trace" <<'PY' || exit 1
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/t.rank*.json"))
assert len(files) == 4, f"expected 4 timelines, found {files}"
for f in files:
    names = {e["name"] for e in json.load(open(f)) if e.get("ph") == "X"}
    assert {"rd", "rab"} <= names and not names & {"shm", "hier_shm"}, f"{f}: algorithm spans {sorted(names)}"
print("shm_fallback: timelines name rd and rab, not shm")
PY
  ;;
split)
  HV_RANKS_PER_NODE=2 run in_small_devshm size=1536k "$@" --algos=hier@512K,auto@512K --shm=off
  # Two communicators x two nodes; at least one node found /dev/shm too small.
  expect_warnings 4 "$fixes"
  grep 'warning: no shared memory' "$out" | grep -q 'needs 1\.0 MiB (2 local ranks x HV_SHM_SLOT_BYTES=512\.0 KiB)' ||
    { echo "shm_fallback: no warning names the sizes" >&2; exit 1; }
  ;;
ro)
  # HV_ALLREDUCE_ALGO=shm: forced, and still the ring (mpi_collectives checks the count).
  run in_small_devshm ro,size=1m "$@" --algos=shm --shm=off
  expect_warnings 1 'creating a 16\.0 MiB region .* failed: Read-only file system' "$fixes"
  ;;
slot0)
  HV_RANKS_PER_NODE=2 run "$@" --algos=auto@0
  expect_warnings 0
  grep -q 'shared memory off: HV_SHM_SLOT_BYTES=0' "$out" || { echo "shm_fallback: the reason is not reported" >&2; exit 1; }
  # Forcing the shared-memory allreduce while turning shared memory off is refused
  # at hv_init, on every rank, naming both variables.
  "$@" --algos=shm@0 >"$out" 2>&1 && { cat "$out"; echo "shm_fallback: HV_ALLREDUCE_ALGO=shm with HV_SHM_SLOT_BYTES=0 was accepted" >&2; exit 1; }
  # Occurrences, not lines: mpirun may join two ranks' lines into one.
  n=$(grep -o 'HV_ALLREDUCE_ALGO=shm needs shared memory, but HV_SHM_SLOT_BYTES=0 turns it off' "$out" | wc -l)
  [ "$n" -eq 4 ] || { cat "$out"; echo "shm_fallback: $n of 4 ranks refused HV_ALLREDUCE_ALGO=shm with HV_SHM_SLOT_BYTES=0" >&2; exit 1; }
  ;;
*)
  echo "shm_fallback: unknown mode $mode" >&2
  exit 2
  ;;
esac
echo "shm_fallback: $mode: passed"
