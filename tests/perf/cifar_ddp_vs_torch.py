#!/usr/bin/python3
"""cifar_ddp_vs_torch.py: training images/second of cifar_ddp against PyTorch
DistributedDataParallel (gloo backend) on the CPU, with any python3 and any torch
(Debian's 1.13 under /usr/bin/python3, PyPI's 2.x in a venv; the header names it) in
each --mode of torch_modes.py (eager; channels_last; compiled = channels_last +
torch.compile of the DDP-wrapped model, skipped on torch < 2): same WideResNet, global batch,
epochs, data (the first --train-size Fashion-MNIST images padded to 32x32), SGD
(momentum 0.9, weight decay 5e-4, lr = base-lr x ranks), no augmentation, each rank
1 thread. A benchmark, not a test: run it on a quiet machine.

Throughput is what both print per epoch: training images of all ranks / training
time of the epoch (validation excluded). The table shows the steady state: the
epochs after the first (whose time includes one-off set-up: oneDNN primitive
creation, first-touch page faults, torch.compile's compilation) when --epochs > 1,
else the first. Runs alternate between the programs and the median of --repeat
(--stat best: the best) is kept for each, which is fairer on a shared machine. The 1-rank cifar_ddp run gives
the scaling efficiency T(2 ranks) / (2 x T(1 rank)). On a loaded machine wall-clock
rates measure the scheduler as much as the code, so the table also gives training
images per CPU-second (process CPU time of every rank, all threads, summed).

--bind core (the default) pins rank r of both programs to CPU r, as hvrun binds each
rank to its cores (mpirun --bind-to core for cifar_ddp, sched_setaffinity in each
PyTorch worker); --bind none leaves placement to the scheduler, which on 2 cores
makes 2-rank runs bimodal (WRN-16-1 under hv: about 1050 or 1300 images/s from run
to run, against 1300 every run when bound).

  /usr/bin/python3 tests/perf/cifar_ddp_vs_torch.py --cifar-ddp build/workloads/cifar_ddp \
      --models wrn-10-1,wrn-16-1,wrn-16-4
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_modes  # noqa: E402

FASHION = "/usr/share/datasets/fashion-mnist"


class BasicBlock(nn.Module):
    """Pre-activation block BN-ReLU-conv3x3-BN-ReLU-conv3x3 (+ 1x1 conv shortcut)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.equal = cin == cout and stride == 1
        self.short = None if self.equal else nn.Conv2d(cin, cout, 1, stride, 0, bias=False)

    def forward(self, x):
        a = F.relu(self.bn1(x))
        out = self.conv2(F.relu(self.bn2(self.conv1(a))))
        return out + (x if self.equal else self.short(a))


class WideResNet(nn.Module):
    """WideResNet-depth-k as trainer/models.c builds it (model_wrn_create)."""

    def __init__(self, depth, k, in_ch, num_classes=10):
        super().__init__()
        n = (depth - 4) // 6
        w = [16, 16 * k, 32 * k, 64 * k]
        self.conv1 = nn.Conv2d(in_ch, w[0], 3, 1, 1, bias=False)
        layers, cin = [], w[0]
        for g in range(3):
            for b in range(n):
                layers.append(BasicBlock(cin, w[g + 1], 2 if (b == 0 and g > 0) else 1))
                cin = w[g + 1]
        self.blocks = nn.Sequential(*layers)
        self.bn = nn.BatchNorm2d(cin)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = F.relu(self.bn(self.blocks(self.conv1(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    n = int.from_bytes(data[4:8], "big")
    if magic == 2051:
        r, c = int.from_bytes(data[8:12], "big"), int.from_bytes(data[12:16], "big")
        return np.frombuffer(data, np.uint8, n * r * c, 16).reshape(n, 1, r, c)
    return np.frombuffer(data, np.uint8, n, 8)


def fashion(split, size):
    pre = "train" if split == "train" else "t10k"
    x = load_idx(f"{FASHION}/{pre}-images-idx3-ubyte.gz")[:size]
    y = load_idx(f"{FASHION}/{pre}-labels-idx1-ubyte.gz")[:size]
    x = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)))  # 28x28 -> 32x32, as cifar_ddp
    x = (torch.from_numpy(x.astype(np.float32)) / 255.0 - 0.2860) / 0.3530
    return x, torch.from_numpy(y.astype(np.int64))


def torch_worker(rank, world, a, model_name, mode, port, q):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    if a.bind == "core":
        os.sched_setaffinity(0, {rank % os.cpu_count()})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(a.seed)
    depth, k = map(int, model_name.split("-")[1:])
    net = WideResNet(depth, k, 1)
    if mode != "eager":
        net = net.to(memory_format=torch.channels_last)
    model = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=a.base_lr * world, momentum=0.9,
                          weight_decay=5e-4)
    if mode == "compiled":
        model = torch.compile(model)  # DDP first, then compile: PyTorch's recommended order
    xtr, ytr = fashion("train", a.train_size)
    xte, yte = fashion("test", a.test_size)
    xtr, xte = torch_modes.prepare_input(xtr, mode), torch_modes.prepare_input(xte, mode)
    local = a.batch_size // world
    sampler = torch.utils.data.distributed.DistributedSampler(
        torch.utils.data.TensorDataset(xtr, ytr), num_replicas=world, rank=rank, shuffle=True,
        seed=a.seed, drop_last=False)
    rates, cpu_rates = [], []
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        idx = torch.tensor(list(iter(sampler)))
        steps = len(idx) // local  # drop_last, as cifar_ddp
        model.train()
        dist.barrier()
        t0, c0 = time.perf_counter(), time.process_time()
        for s in range(steps):
            b = idx[s * local:(s + 1) * local]
            opt.zero_grad()
            loss = F.cross_entropy(model(xtr[b]), ytr[b])
            loss.backward()
            opt.step()
        dt = time.perf_counter() - t0
        cpu = torch.tensor([time.process_time() - c0])
        dist.all_reduce(cpu)
        rates.append(steps * local * world / dt)
        cpu_rates.append(steps * local * world / cpu.item())
        model.eval()
        correct = torch.zeros(2)
        with torch.no_grad():
            for i in range(rank * local, len(xte), world * local):
                out = model(xte[i:i + local])
                correct += torch.tensor([(out.argmax(1) == yte[i:i + local]).sum().item(),
                                         float(len(out))])
        dist.all_reduce(correct)
        if rank == 0:
            print(f"  torch {mode} {model_name} epoch {epoch + 1}: {steps * local * world / dt:.1f} "
                  f"images/s, val acc {correct[0] / correct[1]:.4f}", flush=True)
    if rank == 0:
        q.put((steady(rates), steady(cpu_rates)))
    dist.destroy_process_group()


def steady(rates):
    """Mean throughput of the epochs after the first (the first alone if only one)."""
    r = rates[1:] if len(rates) > 1 else rates
    return sum(r) / len(r)


def torch_run(a, model_name, world, mode):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = 29500 + (os.getpid() % 1000)
    mp.spawn(torch_worker, args=(world, a, model_name, mode, port, q), nprocs=world, join=True)
    return q.get()


def hv_run(a, model_name, world):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    res = tempfile.mkdtemp(prefix="cifar_ddp_bench.")
    cmd = [a.mpirun, "--oversubscribe", "--bind-to", a.bind, "-np", str(world), a.cifar_ddp,
           "--dataset", "fashion-mnist", "--model", model_name, "--batch-size",
           str(a.batch_size), "--epochs", str(a.epochs), "--base-lr", str(a.base_lr),
           "--train-size", str(a.train_size), "--test-size", str(a.test_size), "--no-augment",
           "--warmup-epochs", "0", "--lr-schedule", "constant",  # the torch peer's constant lr
           "--seed", str(a.seed), "--target-accuracy", "1", "--results", res, "--no-plots"]
    subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    with open(os.path.join(res, "results.json")) as f:
        epochs = json.load(f)["epochs"]
    for e in epochs:
        print(f"  hv({world}) {model_name} epoch {e['epoch']}: {e['images_per_second']:.1f} "
              f"images/s, val acc {e['val_accuracy']:.4f}", flush=True)
    return (steady([e["images_per_second"] for e in epochs]),
            steady([e["images"] / e["cpu_seconds"] for e in epochs]))


def summary(runs, stat):
    """Per column (wall, cpu) the median or the best of the runs."""
    cols = list(zip(*runs))
    return [statistics.median(c) if stat == "median" else max(c) for c in cols]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cifar-ddp", required=True, help="path to the cifar_ddp executable")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--models", default="wrn-10-1,wrn-16-1,wrn-16-4")
    ap.add_argument("--mode", default="eager",
                    help="comma-separated torch modes: eager, channels_last, compiled")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--train-size", type=int, default=2048)
    ap.add_argument("--test-size", type=int, default=512)
    ap.add_argument("--base-lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--stat", default="median", choices=["median", "best"])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--bind", default="core", choices=["core", "none"],
                    help="pin rank r of both programs to CPU r (core), or not (none)")
    a = ap.parse_args()
    modes = torch_modes.usable_modes(a.mode)
    print(f"# {torch_modes.describe()} DDP gloo, modes {','.join(modes) or '(none)'}, vs cifar_ddp "
          f"(hv), {a.ranks} ranks x 1 thread, {os.cpu_count()} cpus, load average "
          f"{os.getloadavg()[0]:.1f}; Fashion-MNIST {a.train_size} train / {a.test_size} test, "
          f"global batch {a.batch_size}, {a.epochs} epochs, {a.stat} of {a.repeat}, bind {a.bind}",
          flush=True)
    rows = []
    for name in a.models.split(","):
        runs = {m: [] for m in modes}
        hv_n, hv_1 = [], []
        for _ in range(a.repeat):
            for m in modes:
                runs[m].append(torch_run(a, name, a.ranks, m))
            hv_n.append(hv_run(a, name, a.ranks))
            hv_1.append(hv_run(a, name, 1))
        rows.append((name, {m: summary(r, a.stat) for m, r in runs.items()}, summary(hv_n, a.stat),
                     summary(hv_1, a.stat)))
    print(f"# wall clock: images/second | per CPU-second: images/(CPU-second of all ranks)")
    print(f"# {'model':9} {'batch':>5} {'torch mode':>14} {'torch':>8} {'hv':>8} {'hv/torch':>8} "
          f"{'hv 1rk':>8} {'scaling':>7} | {'torch':>7} {'hv':>7} {'hv/torch':>8}")
    for name, tor, (hw, hc), (h1, _) in rows:
        for m, (tw, tc) in tor.items():
            print(f"  {name:9} {a.batch_size:5d} {m:>14} {tw:8.1f} {hw:8.1f} {hw / tw:8.2f} "
                  f"{h1:8.1f} {hw / (a.ranks * h1):7.2f} | {tc:7.1f} {hc:7.1f} {hc / tc:8.2f}")
    print(f"# load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    sys.exit(main())
