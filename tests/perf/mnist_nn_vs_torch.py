#!/usr/bin/python3
"""mnist_nn_vs_torch.py: mnist_nn (C, on hv) against the same procedure in PyTorch
(any python3 with any torch: Debian's 1.13, PyPI's 2.x; the output names it) on the CPU: one bootstrap x --settings random-search settings with narrowed ranges, each
scored by k-fold CV on the bootstrap sample, the best refit on the whole sample, test
error. A benchmark, not a test (run it on a quiet machine). --mode (torch_modes.py):
eager (default), channels_last, or compiled (channels_last + torch.compile, torch >= 2
only; it compiles each of the settings x folds models anew, which on 2 cores takes
longer than the training it times, so the wall time compares poorly by design).

Faithful port of the study's loop: nn.Sequential(Conv2d(1, n_conv, k) - ReLU - Flatten -
Linear(n_conv*(29-k)^2, n_hidden) - ReLU - Linear(n_hidden, 10)), SGD(lr, momentum),
CrossEntropyLoss (mean), per epoch a shuffled DataLoader(batch_size=10); training stops
after --max-epochs or when an epoch's mean loss is not below tolerance x the previous
one. Same data (the files mnist_nn reads, normalised the same way), same folds and
bootstrap sample (mnist_nn --write-plan writes them), same settings (its search.csv),
same epochs (the default tolerance 1000 makes both run exactly --max-epochs, so the
times compare the same work) and the same threads (OPENBLAS/OMP_NUM_THREADS for
mnist_nn, torch.set_num_threads for PyTorch). Weight initialisation and shuffling use
each framework's own generator, so errors agree statistically, not bit for bit.

--loader dataloader (the study's, default) or tensor (batches sliced from one tensor:
PyTorch without its data-loading overhead) or both. Prints wall and CPU seconds of
each; the CPU seconds compare fairly on a shared machine.

  /usr/bin/python3 tests/perf/mnist_nn_vs_torch.py --mnist-nn build/workloads/mnist_nn
"""
import argparse
import csv
import gzip
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_modes  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "..", "workloads", "data", "mnist-10k")


def load_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    n = int.from_bytes(data[4:8], "big")
    if magic == 2051:
        r, c = int.from_bytes(data[8:12], "big"), int.from_bytes(data[12:16], "big")
        return np.frombuffer(data, np.uint8, n * r * c, 16).reshape(n, 1, r, c)
    return np.frombuffer(data, np.uint8, n, 8)


def mnist(data_dir, split, size):
    pre = "train" if split == "train" else "t10k"
    def find(name):
        p = os.path.join(data_dir, name)
        return p + ".gz" if os.path.exists(p + ".gz") else p
    x = load_idx(find(f"{pre}-images-idx3-ubyte"))
    y = load_idx(find(f"{pre}-labels-idx1-ubyte"))
    if size:
        x, y = x[:size], y[:size]
    # ToTensor + Normalize((0.1307,), (0.3081,)), as mnist_nn.
    x = (torch.from_numpy(x.astype(np.float32)) / 255.0 - 0.1307) / 0.3081
    return x, torch.from_numpy(y.astype(np.int64))


def net(n_conv, k, n_hidden):
    return nn.Sequential(nn.Conv2d(1, n_conv, k), nn.ReLU(), nn.Flatten(),
                         nn.Linear(n_conv * (29 - k) ** 2, n_hidden), nn.ReLU(),
                         nn.Linear(n_hidden, 10))


def batches(x, y, idx, batch, loader, gen):
    if loader == "dataloader":
        ds = torch.utils.data.TensorDataset(x[idx], y[idx])
        yield from torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, generator=gen)
        return
    order = idx[torch.randperm(len(idx), generator=gen)]
    for i in range(0, len(order), batch):
        b = order[i:i + batch]
        yield x[b], y[b]


def train(x, y, idx, hp, a, loader, seed):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = net(hp["n_conv"], hp["kernel"], hp["n_hidden"])
    opt = torch.optim.SGD(model.parameters(), lr=hp["lr"], momentum=hp["momentum"])
    model = torch_modes.prepare(model, a.mode)
    loss_fn = nn.CrossEntropyLoss()
    prev, epochs = float("inf"), 0
    model.train()
    for _ in range(a.max_epochs):
        total = 0.0
        for xb, yb in batches(x, y, idx, a.batch, loader, gen):
            opt.zero_grad()
            loss = loss_fn(model(torch_modes.prepare_input(xb, a.mode)), yb)
            loss.backward()
            opt.step()
            total += loss.item() * len(yb)
        total /= len(idx)
        epochs += 1
        if not total < a.tolerance * prev:
            break
        prev = total
    return model, epochs


@torch.no_grad()
def errors(model, x, y, idx, mode="eager"):
    model.eval()
    wrong = 0
    for i in range(0, len(idx), 1000):
        b = idx[i:i + 1000]
        wrong += int((model(torch_modes.prepare_input(x[b], mode)).argmax(1) != y[b]).sum())
    return wrong


def run_torch(a, plan, settings, xtr, ytr, xte, yte, loader):
    sample = torch.tensor([p[0] for p in plan])
    sfold = torch.tensor([p[1] for p in plan])
    n = len(sample)
    cv = []
    for s, hp in enumerate(settings):
        wrong = 0
        for f in range(a.folds):
            tr, va = sample[sfold != f], sample[sfold == f]
            model, _ = train(xtr, ytr, tr, hp, a, loader, a.seed * 1000 + s * 10 + f)
            wrong += errors(model, xtr, ytr, va, a.mode)
        cv.append(wrong / n)
    best = min(range(len(cv)), key=lambda s: (cv[s], s))
    model, epochs = train(xtr, ytr, sample, settings[best], a, loader, a.seed * 1000 + 999)
    return {"cv": cv, "best": best, "epochs": epochs,
            "train_error": errors(model, xtr, ytr, sample, a.mode) / n,
            "test_error": errors(model, xte, yte, torch.arange(len(yte)), a.mode) / len(yte)}


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_self():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mnist-nn", required=True, help="path of the mnist_nn executable")
    p.add_argument("--data-dir", default=DEFAULT_DATA)
    p.add_argument("--settings", type=int, default=4)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--max-epochs", type=int, default=2)
    p.add_argument("--tolerance", type=float, default=1000.0)
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--train-size", type=int, default=0, help="0: all")
    p.add_argument("--test-size", type=int, default=0, help="0: all")
    # Small nets, where batch 10 makes per-step framework overhead matter; larger ones
    # (e.g. --conv-max 33 --hidden-max 257) are bound by the memory traffic of the
    # hidden layer's weights in both programs.
    p.add_argument("--ranges", default="--conv-min 4 --conv-max 17 --kernel-min 3 --kernel-max 8 "
                   "--hidden-min 16 --hidden-max 129 --log-lr-min -2.5 --log-lr-max -1.5 "
                   "--log-momentum-min -1 --log-momentum-max -0.2",
                   help="narrowed ranges passed to mnist_nn")
    p.add_argument("--loader", choices=["dataloader", "tensor", "both"], default="both")
    p.add_argument("--mode", default="eager", choices=list(torch_modes.MODES))
    a = p.parse_args()
    why = torch_modes.mode_skip_reason(a.mode)
    if why:
        sys.exit(f"skipped: {why}")
    print(f"# {torch_modes.describe()}, mode {a.mode}", flush=True)
    if a.mode == "compiled":
        print(f"# {torch_modes.describe_compiled()}", flush=True)

    torch.set_num_threads(a.threads)
    out = tempfile.mkdtemp(prefix="mnist_nn_bench_")
    cmd = [a.mnist_nn, "--data-dir", a.data_dir, "--seed", str(a.seed), "--folds", str(a.folds),
           "--max-epochs", str(a.max_epochs), "--tolerance", str(a.tolerance), "--batch",
           str(a.batch), "--plot-first", "0", "--no-plots", "--write-plan", "--results", out]
    if a.train_size:
        cmd += ["--train-size", str(a.train_size)]
    if a.test_size:
        cmd += ["--test-size", str(a.test_size)]
    cmd += a.ranges.split() + ["1", str(a.settings)]
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
    print("#", " ".join(cmd), flush=True)
    c0, t0 = cpu_children(), time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    c_wall, c_cpu = time.perf_counter() - t0, cpu_children() - c0
    if r.returncode != 0:
        sys.exit(f"mnist_nn failed ({r.returncode}):\n{r.stdout}")
    print(r.stdout, end="")

    with open(os.path.join(out, "plan", "bootstrap_0.csv")) as f:
        plan = [(int(row["image"]), int(row["fold"])) for row in csv.DictReader(f)]
    with open(os.path.join(out, "search.csv")) as f:
        rows = [row for row in csv.DictReader(f) if row["bootstrap"] == "0"]
    settings = [{"n_conv": int(r_["n_conv_layer"]), "kernel": int(r_["kernel_size"]),
                 "n_hidden": int(r_["n_hidden_layer"]), "lr": float(r_["lr"]),
                 "momentum": float(r_["momentum"])} for r_ in rows]
    c_cv = [float(r_["cv_error"]) for r_ in rows]
    with open(os.path.join(out, "models.csv")) as f:
        c_model = next(csv.DictReader(f))
    xtr, ytr = mnist(a.data_dir, "train", a.train_size)
    xte, yte = mnist(a.data_dir, "test", a.test_size)

    results = {}
    for loader in (["dataloader", "tensor"] if a.loader == "both" else [a.loader]):
        cs, ts = cpu_self(), time.perf_counter()
        res = run_torch(a, plan, settings, xtr, ytr, xte, yte, loader)
        res["wall"], res["cpu"] = time.perf_counter() - ts, cpu_self() - cs
        results[loader] = res

    print(f"\n# 1 bootstrap x {a.settings} settings, {a.folds}-fold CV + refit, {len(plan)} "
          f"training / {len(yte)} test images, {a.max_epochs} epoch(s) (tolerance "
          f"{a.tolerance}), batch {a.batch}, {a.threads} thread(s)")
    print("# setting  n_conv kernel n_hidden       lr  momentum   CV error: mnist_nn "
          + " ".join(f"{k:>10}" for k in results))
    for s, hp in enumerate(settings):
        print(f"  {s:7d} {hp['n_conv']:7d} {hp['kernel']:6d} {hp['n_hidden']:8d} "
              f"{hp['lr']:8.3g} {hp['momentum']:9.3g}   {100 * c_cv[s]:17.2f}% "
              + " ".join(f"{100 * r_['cv'][s]:9.2f}%" for r_ in results.values()))
    print(f"\n{'program':<34} {'wall s':>8} {'CPU s':>8} {'best':>5} {'test error':>11}")
    print(f"{'mnist_nn (C, hv)':<34} {c_wall:8.2f} {c_cpu:8.2f} "
          f"{[float(x) for x in c_cv].index(min(c_cv)):5d} {100 * float(c_model['test_error']):10.2f}%")
    for k, r_ in results.items():
        print(f"{'pytorch ' + a.mode + ' ' + k:<34} {r_['wall']:8.2f} {r_['cpu']:8.2f} {r_['best']:5d} "
              f"{100 * r_['test_error']:10.2f}%")
    for k, r_ in results.items():
        print(f"speed-up of mnist_nn over pytorch {torch.__version__} {a.mode} {k}: {r_['wall'] / c_wall:.2f}x wall, "
              f"{r_['cpu'] / c_cpu:.2f}x CPU")


if __name__ == "__main__":
    main()
