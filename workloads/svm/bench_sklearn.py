#!/usr/bin/python3
"""bench_sklearn.py: the scikit-learn reference for mnist_svm (benchmark, not CI).

Runs scikit-learn's SVC (LIBSVM inside) wrapped in OneVsRestClassifier, as mnist_svm
does one-vs-rest, on exactly the same data, standardisation, folds and (C, gamma) grid
as a finished mnist_svm run, and compares wall time and validation error per grid
point. The folds and grid are read from the mnist_svm results folder (folds.csv,
grid.csv, results.json), so both sides see identical splits.

  mnist_svm --results R --train-size 8000 --log-c-min .. 4          # ours first
  /usr/bin/python3 bench_sklearn.py --results R [--data-dir D] [--n-jobs 2]

Writes R/sklearn_cv_errors.csv and R/sklearn_compare.json and prints a table.
Needs Debian python3-sklearn (and python3-numpy).
"""
import argparse
import csv
import gzip
import json
import os
import sys
import time

import numpy as np
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "data", "mnist-10k")


def read_idx(path):
    """Standard MNIST IDX (gz or plain): magic 2051 images / 2049 labels."""
    opener = gzip.open if os.path.exists(path + ".gz") else open
    name = path + ".gz" if os.path.exists(path + ".gz") else path
    with opener(name, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    n = int.from_bytes(data[4:8], "big")
    if magic == 2051:
        rows, cols = int.from_bytes(data[8:12], "big"), int.from_bytes(data[12:16], "big")
        return np.frombuffer(data, np.uint8, n * rows * cols, 16).reshape(n, rows * cols)
    if magic == 2049:
        return np.frombuffer(data, np.uint8, n, 8)
    sys.exit(f"bench_sklearn: {name}: not an IDX images/labels file (magic {magic})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", required=True, help="mnist_svm results folder")
    ap.add_argument("--data-dir", default=DEFAULT_DATA)
    ap.add_argument("--n-jobs", type=int, default=1,
                    help="OneVsRestClassifier processes; with 1 (the default) the CPU time "
                         "measured is the whole cost, comparable on a shared machine")
    ap.add_argument("--cache-mb", type=float, default=1000.0, help="SVC cache_size")
    ap.add_argument("--max-points", type=int, default=0,
                    help="only the first N grid points (0: all), to bound the run time")
    ap.add_argument("--points", default="",
                    help="only these grid points, by row of grid.csv, e.g. 0,5,10,15 (the "
                         "diagonal of a 4 x 4 grid), to bound the run time")
    args = ap.parse_args()

    with open(os.path.join(args.results, "results.json")) as f:
        ours = json.load(f)
    folds = np.array([int(r["fold"]) for r in csv.DictReader(open(os.path.join(args.results, "folds.csv")))])
    grid = list(csv.DictReader(open(os.path.join(args.results, "grid.csv"))))
    n = len(folds)
    x = read_idx(os.path.join(args.data_dir, "train-images-idx3-ubyte"))[:n]
    y = read_idx(os.path.join(args.data_dir, "train-labels-idx1-ubyte"))[:n]
    x = (x.astype(np.float64) - 127.5) / 73.61  # the study's standardisation, as mnist_svm
    k = ours["folds"]
    n_points = len(grid)
    for row, pt in zip(grid, ours["points"]):
        row["cpu"] = pt.get("cpu_seconds")  # mnist_svm's fits of this point (no kernel)
    if args.points:
        grid = [grid[int(i)] for i in args.points.split(",")]
    elif args.max_points > 0:
        grid = grid[: args.max_points]

    rows, table = [], []
    t_all = time.perf_counter()
    for g in grid:
        C, gamma = float(g["C"]), float(g["gamma"])
        errs, t0, c0 = [], time.perf_counter(), time.process_time()
        for fold in range(k):
            tr, va = folds != fold, folds == fold
            clf = OneVsRestClassifier(
                SVC(C=C, gamma=gamma, kernel="rbf", tol=ours["smo_eps"], cache_size=args.cache_mb),
                n_jobs=args.n_jobs)
            clf.fit(x[tr], y[tr])
            e = int(np.sum(clf.predict(x[va]) != y[va]))
            errs.append(100.0 * e / int(va.sum()))
            rows.append([g["log10_gamma"], g["log10_C"], fold, int(va.sum()), e, f"{errs[-1]:.4f}"])
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        mean_ours = float(g["mean_error_pct"])
        table.append({"log10_gamma": float(g["log10_gamma"]), "log10_C": float(g["log10_C"]),
                      "sklearn_mean_error_pct": float(np.mean(errs)),
                      "mnist_svm_mean_error_pct": mean_ours,
                      "diff_pct_points": float(np.mean(errs)) - mean_ours,
                      "sklearn_seconds": secs, "sklearn_cpu_seconds": cpu,
                      "mnist_svm_fit_cpu_seconds": g["cpu"]})
        print(f"log10 gamma {g['log10_gamma']:>8} log10 C {g['log10_C']:>8}: sklearn "
              f"{np.mean(errs):6.2f}%  mnist_svm {mean_ours:6.2f}%  ({secs:.1f} s, {cpu:.1f} s CPU)",
              flush=True)
    sk_total = time.perf_counter() - t_all
    sk_cpu = sum(t["sklearn_cpu_seconds"] for t in table)
    our_cpu = sum(ours.get("rank_cpu_seconds", [float("nan")]))
    # Per point: mnist_svm's whole CV CPU (kernels included) shared out over the points
    # in proportion to their fit CPU, against sklearn's CPU on the same points.
    fit_all = sum(p.get("cpu_seconds") or 0.0 for p in ours["points"])
    fit_sel = sum(t["mnist_svm_fit_cpu_seconds"] or 0.0 for t in table)
    our_cpu_sel = our_cpu * fit_sel / fit_all if fit_all > 0 else float("nan")
    our_cpu_per_point = our_cpu_sel / len(grid)
    sk_cpu_per_point = sk_cpu / len(grid)

    with open(os.path.join(args.results, "sklearn_cv_errors.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["log10_gamma", "log10_C", "fold", "n_val", "errors", "error_pct"])
        w.writerows(rows)
    full = len(grid) == n_points
    summary = {
        "n_train": n, "folds": k, "grid_points": len(grid), "whole_grid": full,
        "sklearn_seconds": sk_total, "sklearn_cpu_seconds": sk_cpu, "sklearn_n_jobs": args.n_jobs,
        "mnist_svm_cv_seconds": ours["cv_seconds"], "mnist_svm_cpu_seconds": our_cpu,
        "mnist_svm_ranks": ours["ranks"],
        "speedup_wall": sk_total / ours["cv_seconds"] if full else None,
        "speedup_cpu": sk_cpu / our_cpu if full else None,
        "sklearn_cpu_seconds_per_point": sk_cpu_per_point,
        "mnist_svm_cpu_seconds_per_point": our_cpu_per_point,
        "speedup_cpu_per_point": sk_cpu_per_point / our_cpu_per_point,
        "max_abs_diff_pct_points": max(abs(t["diff_pct_points"]) for t in table),
        "points": table,
    }
    with open(os.path.join(args.results, "sklearn_compare.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"scikit-learn {sk_total:.1f} s wall, {sk_cpu:.1f} s CPU vs mnist_svm "
          f"{ours['cv_seconds']:.1f} s wall, {our_cpu:.1f} s CPU ({ours['ranks']} rank(s))" +
          (f": {sk_total / ours['cv_seconds']:.1f}x wall, {sk_cpu / our_cpu:.1f}x CPU" if full
           else f" (partial grid: {len(grid)} of {n_points} points; CPU per point "
                f"{sk_cpu_per_point:.1f} s vs {our_cpu_per_point:.1f} s: "
                f"{sk_cpu_per_point / our_cpu_per_point:.1f}x)"))
    print(f"largest |difference| of mean validation error: {summary['max_abs_diff_pct_points']:.3f} "
          "percentage points")


if __name__ == "__main__":
    main()
