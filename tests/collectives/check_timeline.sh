#!/bin/sh
# check_timeline.sh MPIRUN_ARGS... PROGRAM: runs PROGRAM with HV_TIMELINE set and
# checks that every rank wrote a valid Chrome-trace JSON holding QUEUE, NEGOTIATE,
# FUSION_PACK and an allreduce algorithm span for the tensors it ran.
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
HV_TIMELINE="$dir/trace.json" "$@"
python3 - "$dir" <<'PY'
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/trace.rank*.json"))
assert len(files) >= 2, f"expected a file per rank, found {files}"
for f in files:
    events = json.load(open(f))
    spans = [e for e in events if e.get("ph") == "X"]
    phases = {e["name"] for e in spans}
    for want in ("QUEUE", "NEGOTIATE", "FUSION_PACK", "FUSION_UNPACK"):
        assert want in phases, f"{f}: no {want} span (have {sorted(phases)})"
    assert phases & {"ring", "rd", "rab", "2d", "mpi", "shm", "hier", "hier_shm"}, f"{f}: no algorithm span"
    rows = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert any(r.startswith("stress.t") for r in rows), f"{f}: tensor rows missing"
    assert all(e["dur"] >= 0 for e in spans)
    print(f"{f}: {len(spans)} spans, {len(rows)} tensors, phases {sorted(phases)}")
PY
