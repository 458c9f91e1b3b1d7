#!/usr/bin/env python3
"""hvbench_median.py: runs one hvbench command several times and prints, per size and
backend, the median over the runs of each run's per-iteration median time (p50), and
its ratio to the MPI peer's.

hvbench times its backends one after another (one hv communicator at a time), so on
a shared or noisy machine a slow spell can land on one backend's table and not on
the peer's. Repeating the whole run and taking medians makes the ratios stable enough
to quote. Usage:

  tests/perf/hvbench_median.py [--runs 5] [--np 2] [--launcher "mpirun ..."] \\
      [--placement in-place|out-of-place] -- build/bin/hvbench allreduce -b 4K -e 256M -f 4 --algo all
"""
import argparse
import collections
import csv
import os
import shlex
import statistics
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--launcher", default="mpirun --oversubscribe --bind-to none")
    ap.add_argument("--placement", default="in-place", choices=["in-place", "out-of-place"])
    ap.add_argument("hvbench", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.hvbench[1:] if a.hvbench[:1] == ["--"] else a.hvbench
    if not cmd or a.runs < 1:
        ap.error("give the hvbench command after --, and --runs >= 1")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    times = collections.defaultdict(list)  # (backend, bytes) -> [p50 per run]
    backends = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(a.runs):
            out = os.path.join(tmp, "run%d.csv" % run)
            full = shlex.split(a.launcher) + ["-np", str(a.np)] + cmd + ["--csv", out]
            p = subprocess.run(full, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode != 0:
                sys.stderr.write(p.stdout[-4000:])
                sys.exit("hvbench_median: run %d exited %d: %s" % (run + 1, p.returncode, " ".join(full)))
            for r in csv.DictReader(open(out)):
                if r["placement"] != a.placement:
                    continue
                if r["backend"] not in backends:
                    backends.append(r["backend"])
                times[(r["backend"], int(r["size_bytes"]))].append(float(r["p50_us"]))
    sizes = sorted({s for _, s in times})
    print("# %d runs of: %s" % (a.runs, " ".join(cmd)))
    print("# %s; median over runs of the per-iteration median time (us); x = MPI's time / this one's"
          % a.placement)
    print("%12s" % "bytes" + "".join("%22s" % b for b in backends))
    for s in sizes:
        peer = times.get(("mpi", s))
        ref = statistics.median(peer) if peer else None
        cells = []
        for b in backends:
            t = times.get((b, s))
            if not t:
                cells.append("%22s" % "-")
                continue
            m = statistics.median(t)
            cells.append("%12.1f %8s" % (m, ("%.2fx" % (ref / m)) if ref and b != "mpi" else ""))
        print("%12d" % s + "".join(cells))


if __name__ == "__main__":
    main()
