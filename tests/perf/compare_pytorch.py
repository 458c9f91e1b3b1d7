#!/usr/bin/python3
"""compare_pytorch.py: training images/second of the hv C trainer vs PyTorch (CPU)
on the same models, batch sizes, thread counts and synthetic data, side by side.

One step = forward, mean cross-entropy, backward, SGD (momentum 0.9, weight decay
5e-4), in float32, batch-norm in training mode. The C side is bench_trainer (built
with the trainer; OPENBLAS_NUM_THREADS sets its threads); the PyTorch side runs
torch.set_num_threads(t). Runs alternate between the two and the best of --repeat
is kept for each, which is fairer on a shared machine. --cpu-time divides by the
process CPU time instead of wall time (both sides): with 1 thread and a busy machine
it measures the code, not the scheduler; with more threads it is not throughput.

  python3 tests/perf/compare_pytorch.py --bench build/tests/trainer/bench_trainer
"""
import argparse
import os
import re
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvNet(nn.Module):
    """The ConvNet of the classic PyTorch DDP MNIST tutorial."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(1, 16, 5, 1, 2), nn.BatchNorm2d(16), nn.ReLU(),
                                    nn.MaxPool2d(2, 2))
        self.layer2 = nn.Sequential(nn.Conv2d(16, 32, 5, 1, 2), nn.BatchNorm2d(32), nn.ReLU(),
                                    nn.MaxPool2d(2, 2))
        self.fc = nn.Linear(7 * 7 * 32, num_classes)

    def forward(self, x):
        x = self.layer2(self.layer1(x))
        return self.fc(x.reshape(x.size(0), -1))


class BasicBlock(nn.Module):
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
    """Pre-activation WideResNet-depth-k (Zagoruyko & Komodakis), as trainer/models.c."""

    def __init__(self, depth, k, num_classes=10):
        super().__init__()
        n = (depth - 4) // 6
        w = [16, 16 * k, 32 * k, 64 * k]
        self.conv1 = nn.Conv2d(3, w[0], 3, 1, 1, bias=False)
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


CLOCK = time.perf_counter


def torch_bench(name, batch, threads, steps, warmup):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    if name == "convnet":
        model, shape = ConvNet(), (batch, 1, 28, 28)
    else:
        depth, k = map(int, name.split("-")[1:])
        model, shape = WideResNet(depth, k), (batch, 3, 32, 32)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(shape)
    y = torch.randint(0, 10, (batch,))
    for s in range(warmup + steps):
        if s == warmup:
            t0 = CLOCK()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return steps * batch / (CLOCK() - t0)


def hv_bench(bench, name, batch, threads, steps, warmup):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    if CLOCK is time.process_time:
        env["HV_BENCH_CPU_TIME"] = "1"
    out = subprocess.run([bench, name, str(batch), str(steps), str(warmup)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"images_per_s=([0-9.]+)", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True, help="path to the bench_trainer executable")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="convnet:100,wrn-10-1:64,wrn-16-4:64")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu-time", action="store_true", help="divide by CPU time, not wall time")
    a = ap.parse_args()
    global CLOCK
    if a.cpu_time:
        CLOCK = time.process_time
    print(f"# torch {torch.__version__}, oneDNN {torch.backends.mkldnn.is_available()}, "
          f"{os.cpu_count()} cpus, {'CPU' if a.cpu_time else 'wall'} time, best of {a.repeat}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"# {'model':10} {'batch':>5} {'threads':>7} {'torch img/s':>12} {'hv img/s':>10} "
          f"{'hv/torch':>8}")
    for spec in a.models.split(","):
        name, batch = spec.split(":")
        batch = int(batch)
        steps = a.steps if name != "wrn-16-4" else max(3, a.steps // 3)
        for t in map(int, a.threads.split(",")):
            best_t = best_h = 0.0
            for _ in range(a.repeat):
                best_t = max(best_t, torch_bench(name, batch, t, steps, a.warmup))
                best_h = max(best_h, hv_bench(a.bench, name, batch, t, steps, a.warmup))
            print(f"  {name:10} {batch:5d} {t:7d} {best_t:12.1f} {best_h:10.1f} "
                  f"{best_h / best_t:8.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
