#!/usr/bin/env python3
"""calibrate_sim.py: the simulator against the emulated cluster. Runs hv's
algorithms (hvbench --no-engine: ring, rd, hier) on the calibration platforms
tools/sim/platforms/netns-*.xml (network/model CM02: the measured link numbers as
they are) at the sizes of the real reference CSV (calibrate_real.sh), and prints, per
layout, algorithm and size, the real median, the simulated time and their ratio; a
ratio off by more than 15% is marked.

Open MPI's TCP transport, on the emulated cluster, either keeps both directions of a pair
of nodes at the full rate or takes turns between them (half the rate each way), decided
per launch (README.md). So one rank per node is simulated on two models: full duplex
(netns-*-1g.xml), compared with the fastest of the real runs, and the pair-shared model
(netns-*-1g-pair.xml: both directions between two nodes share one rate), compared with
the real median. A row is within 15% when either comparison is. Two ranks per node use the
full-duplex model only (the turn-taking is per pair of processes, which routes between
nodes cannot express).

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


def simulate(hvbench, nodes, ppn, algo, sizes, work, model):
    platform = os.path.join(HERE, "platforms", f"netns-{nodes}n-1g{'-pair' if model == 'pair' else ''}.xml")
    hosts = os.path.join(HERE, "platforms", f"hosts-netns-{nodes}n-{ppn}ppn.txt")
    out = os.path.join(work, f"{nodes}x{ppn}-{algo}-{model}.json")
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
            if row["median_ms"]:
                real[(int(row["nodes"]), int(row["ppn"]), row["algo"], int(row["bytes"]))] = (
                    float(row["median_ms"]), float(row["min_ms"]))
    work = tempfile.mkdtemp(prefix="calibrate_sim.")
    layouts = sorted({(k[0], k[1]) for k in real})
    print("layout,algo,bytes,real_median_ms,real_min_ms,sim_full_ms,sim_pair_ms,full/min,pair/median,within15%")
    within = total = 0
    for nodes, ppn in layouts:
        for algo in args.algos.split(","):
            sizes = sorted(k[3] for k in real if k[:3] == (nodes, ppn, algo))
            if not sizes:
                continue
            full = simulate(args.hvbench, nodes, ppn, algo, sizes, work, "full")
            pair = simulate(args.hvbench, nodes, ppn, algo, sizes, work, "pair") if ppn == 1 else {}
            for size in sizes:
                med, low = real[(nodes, ppn, algo, size)]
                f, p_ = full.get(size), pair.get(size)
                r_full = f / low if f else float("nan")
                r_pair = p_ / med if p_ else float("nan")
                which = [name for name, r in (("full", r_full), ("pair", r_pair)) if abs(r - 1) <= 0.15]
                within += bool(which)
                total += 1
                print(f"{nodes}x{ppn},{algo},{size},{med:.1f},{low:.1f},{f or float('nan'):.1f},"
                      f"{p_ or float('nan'):.1f},{r_full:.3f},{r_pair:.3f},{'+'.join(which) or 'NO'}")
    print(f"# within 15%: {within} of {total}; runs kept in {work}")


if __name__ == "__main__":
    main()
