#!/usr/bin/env python3
"""nodecount_plot.py: allreduce time against node count (16, 128, 1,024 nodes x 1 rank,
100 Gbit/s fat trees) at 4 KiB, 1 MiB and 256 MiB, from hvsim's results.

    python3 tools/sim/nodecount_plot.py      # writes tools/sim/results/time-vs-nodes.{dat,gp,png}

Reads tools/sim/results/fattree-{16,128,1024}n-100g-1ppn*.json (every file of a scale is
merged: the 1,024-node algorithms came from a second hvsim run). Series: hv auto, rd, rab,
ring, the best SMPI algorithm at that size, and the bound 2(n-1)/n S/B + ceil(log2 n) lat.
A point that was not simulated is left out (the .dat says which) and printed on stderr.
"""
import glob
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RES = os.path.join(HERE, "results")
NODES = (16, 128, 1024)
SIZES = ((4096, "4 KiB"), (1 << 20, "1 MiB"), (1 << 28, "256 MiB"))
SERIES = ("alg:auto", "alg:rd", "alg:rab", "alg:ring", "best SMPI", "bound")


def load(n):
    rows, meta = {}, None
    for path in sorted(glob.glob(os.path.join(RES, "fattree-%dn-100g-1ppn*.json" % n))):
        with open(path) as f:
            doc = json.load(f)
        meta = meta or doc
        for r in doc["rows"]:
            rows.setdefault(r["size"], {}).update({k: v for k, v in r["times_us"].items() if v})
    return rows, meta


def main():
    table = {}
    for n in NODES:
        rows, meta = load(n)
        bw, lat = meta["bw_Bps"], meta["lat_s"]
        for size, _ in SIZES:
            t = rows.get(size, {})
            peers = {k: v for k, v in t.items() if k.startswith("smpi:")}
            cell = {s: t.get(s) for s in SERIES[:4]}
            cell["best SMPI"] = min(peers.values()) if peers else None
            cell["bound"] = (2.0 * (n - 1) / n * size / bw + math.ceil(math.log2(n)) * lat) * 1e6
            table[(n, size)] = cell
    dat = os.path.join(RES, "time-vs-nodes.dat")
    with open(dat, "w") as f:
        f.write("# simulated us; blocks: size (4 KiB, 1 MiB, 256 MiB) x series; '-' not simulated\n")
        for size, label in SIZES:
            for s in SERIES:
                f.write("# %s %s\n" % (label, s))
                for n in NODES:
                    v = table[(n, size)][s]
                    if v:
                        f.write("%d %.3f\n" % (n, v))
                    else:
                        sys.stderr.write("nodecount_plot: no %s at %d nodes, %s\n" % (s, n, label))
                f.write("\n\n")
    png = os.path.join("tools", "sim", "results", "time-vs-nodes.png")
    datrel = os.path.join("tools", "sim", "results", "time-vs-nodes.dat")
    gp = ["set terminal pngcairo size 1500,520 noenhanced", "set output '%s'" % png,
          "set multiplot layout 1,3 title 'allreduce time against node count (1 rank per node, 100 Gbit/s fat tree, simulated)'",
          "set logscale xy", "set xtics (16, 128, 1024)", "set xlabel 'nodes'", "set ylabel 'simulated us'",
          "set grid", "set key left top"]
    for i, (size, label) in enumerate(SIZES):
        series = ", ".join("'%s' index %d with linespoints title '%s'" % (datrel, i * len(SERIES) + j, s)
                           for j, s in enumerate(SERIES))
        gp += ["set title '%s'" % label, "plot " + series]
    gp.append("unset multiplot")
    gpf = os.path.join(RES, "time-vs-nodes.gp")
    with open(gpf, "w") as f:
        f.write("\n".join(gp) + "\n")
    print("| nodes | size | " + " | ".join(SERIES) + " |")
    print("|---|---|" + "---|" * len(SERIES))
    for size, label in SIZES:
        for n in NODES:
            c = table[(n, size)]
            print("| %d | %s | " % (n, label) + " | ".join("%.1f" % c[s] if c[s] else "–" for s in SERIES) + " |")
    os.chdir(os.path.join(HERE, "..", ".."))
    return subprocess.call(["gnuplot", gpf])


if __name__ == "__main__":
    sys.exit(main())
