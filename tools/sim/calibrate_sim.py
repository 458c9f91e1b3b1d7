#!/usr/bin/env python3
"""calibrate_sim.py: the simulator against the emulated cluster. Runs hv's
algorithms (hvbench --no-engine: ring, rd, hier) on the calibration platforms
tools/sim/platforms/netns-*.xml (network/model CM02: the measured link numbers as
they are) at the sizes of the real reference CSV (calibrate_real.sh), and prints, per
layout, algorithm and size, the real median, the simulated time and their ratio; a
ratio off by more than 15% is marked. 2 nodes x 1 rank use the -half platform (Open MPI's
TCP transport takes turns between the two directions of one pair: README.md).

  tools/sim/calibrate_sim.py tools/sim/calibration/real-2026-11-27.csv [--hvbench build-sim/bin/hvbench]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def simulate(hvbench, nodes, ppn, algo, sizes, work):
    half = "-half" if (nodes, ppn) == (2, 1) else ""
    platform = os.path.join(HERE, "platforms", f"netns-{nodes}n-1g{half}.xml")
    hosts = os.path.join(HERE, "platforms", f"hosts-netns-{nodes}n-{ppn}ppn.txt")
    out = os.path.join(work, f"{nodes}x{ppn}-{algo}.json")
    cmd = ["smpirun", "-np", str(nodes * ppn), "-platform", platform, "-hostfile", hosts,
           "--cfg=smpi/simulate-computation:no", "--cfg=network/model:CM02", "--cfg=smpi/coll-selector:ompi",
           hvbench, "allreduce", "-b", str(min(sizes)), "-e", str(max(sizes)), "-f", "4", "-n", "2", "-w", "1",
           "-c", "0", "--algo", algo, "--no-engine", "--no-peer", "--json", out]
    env = dict(os.environ, HV_SIM_SHARED_BYTES="65536")
    with open(out + ".log", "w") as log:
        if subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env) != 0:
            sys.exit(f"calibrate_sim: {' '.join(cmd)} failed: {out}.log")
    with open(out) as f:
        rows = json.load(f)["rows"]
    return {r["size"]: r["out_of_place"]["time_us"] / 1e3 for r in rows if r["out_of_place"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("real_csv")
    p.add_argument("--hvbench", default=os.path.join(HERE, "..", "..", "build-sim", "bin", "hvbench"))
    p.add_argument("--algos", default="ring,rd,hier")
    args = p.parse_args()
    real = {}
    with open(args.real_csv) as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            real[(int(row["nodes"]), int(row["ppn"]), row["algo"], int(row["bytes"]))] = float(row["median_ms"])
    work = tempfile.mkdtemp(prefix="calibrate_sim.")
    layouts = sorted({(k[0], k[1]) for k in real})
    print("layout,algo,bytes,real_ms,sim_ms,sim/real,within15%")
    worst = 0.0
    for nodes, ppn in layouts:
        for algo in args.algos.split(","):
            sizes = sorted(k[3] for k in real if k[:3] == (nodes, ppn, algo))
            if not sizes:
                continue
            sim = simulate(args.hvbench, nodes, ppn, algo, sizes, work)
            for size in sizes:
                r, s = real[(nodes, ppn, algo, size)], sim.get(size)
                ratio = s / r if s else float("nan")
                ok = abs(ratio - 1) <= 0.15
                worst = max(worst, abs(ratio - 1))
                print(f"{nodes}x{ppn},{algo},{size},{r:.1f},{s:.1f},{ratio:.3f},{'yes' if ok else 'NO'}")
    print(f"# largest gap: {worst * 100:.0f}%; runs kept in {work}")


if __name__ == "__main__":
    main()
