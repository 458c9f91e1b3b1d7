#!/usr/bin/python3
"""compare_pytorch.py: training images/second of the hv C trainer vs PyTorch (CPU)
on the same models, batch sizes, thread counts and synthetic data, side by side.

One step = forward, mean cross-entropy, backward, SGD (momentum 0.9, weight decay
5e-4), in float32, batch-norm in training mode. The C side is bench_trainer (built
with the trainer; OPENBLAS_NUM_THREADS sets its threads); the PyTorch side runs
torch.set_num_threads(t), in each --mode of torch_modes.py (eager, channels_last,
compiled = channels_last + torch.compile; compiled is skipped, with a message, on
torch < 2). Any python3 with any torch runs it: Debian's /usr/bin/python3 has 1.13,
a venv with PyPI's torch 2.x the current one; the header names the version.

Runs alternate between hv and each mode, --repeat times; the table gives the median
of each (--stat best for the best), which is fairer on a shared machine, and the ratio
hv/torch of those medians. Each torch model is built (and compiled) once per model and
thread count; its --warmup steps, compilation included, are not timed. --cpu-time
divides by the process CPU time instead of wall time (both sides): with 1 thread and a
busy machine it measures the code, not the scheduler; with more threads it is not
throughput.

  python3 tests/perf/compare_pytorch.py --bench build/tests/trainer/bench_trainer
  /opt/torch2/bin/python tests/perf/compare_pytorch.py --bench ... --mode eager,channels_last,compiled
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_modes  # noqa: E402


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


def torch_stepper(name, batch, threads, mode, warmup):
    """A function that runs `steps` training steps and returns images/second, after
    building the model in the mode and running --warmup steps (compilation)."""
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    if name == "convnet":
        model, shape = ConvNet(), (batch, 1, 28, 28)
    else:
        depth, k = map(int, name.split("-")[1:])
        model, shape = WideResNet(depth, k), (batch, 3, 32, 32)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    model = torch_modes.prepare(model, mode)
    x = torch_modes.prepare_input(torch.randn(shape), mode)
    y = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()

    def run(steps):
        torch.set_num_threads(threads)
        t0 = CLOCK()
        for _ in range(steps):
            step()
        return steps * batch / (CLOCK() - t0)

    return run


def hv_bench(bench, name, batch, threads, steps, warmup):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    if CLOCK is time.process_time:
        env["HV_BENCH_CPU_TIME"] = "1"
    out = subprocess.run([bench, name, str(batch), str(steps), str(warmup)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"images_per_s=([0-9.]+)", out).group(1))


def summary(values, stat):
    return statistics.median(values) if stat == "median" else max(values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--bench", required=True, help="path to the bench_trainer executable")
    ap.add_argument("--baseline", help="another bench_trainer (e.g. the previous build), run "
                    "interleaved with the others: its img/s and hv/baseline are added")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="convnet:100,wrn-10-1:64,wrn-16-4:64")
    ap.add_argument("--mode", default="eager",
                    help="comma-separated torch modes: eager, channels_last, compiled")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stat", default="median", choices=["median", "best"])
    ap.add_argument("--cpu-time", action="store_true", help="divide by CPU time, not wall time")
    a = ap.parse_args()
    global CLOCK
    if a.cpu_time:
        CLOCK = time.process_time
    modes = torch_modes.usable_modes(a.mode)
    print(f"# {torch_modes.describe()}, modes {','.join(modes) or '(none)'}; {os.cpu_count()} cpus, "
          f"{'CPU' if a.cpu_time else 'wall'} time, {a.stat} of {a.repeat}, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    base_cols = f" {'base img/s':>10} {'hv/base':>7} {'base/torch':>10}" if a.baseline else ""
    print(f"# {'model':10} {'batch':>5} {'threads':>7} {'torch mode':>14} {'torch img/s':>12} "
          f"{'hv img/s':>10} {'hv/torch':>8}{base_cols}")
    for spec in a.models.split(","):
        name, batch = spec.split(":")
        batch = int(batch)
        steps = a.steps if name != "wrn-16-4" else max(3, a.steps // 3)
        for t in map(int, a.threads.split(",")):
            runs = {m: torch_stepper(name, batch, t, m, a.warmup) for m in modes}
            tv = {m: [] for m in modes}
            hv, base = [], []
            for _ in range(a.repeat):
                hv.append(hv_bench(a.bench, name, batch, t, steps, a.warmup))
                if a.baseline:
                    base.append(hv_bench(a.baseline, name, batch, t, steps, a.warmup))
                for m in modes:
                    tv[m].append(runs[m](steps))
            h = summary(hv, a.stat)
            b = summary(base, a.stat) if a.baseline else 0
            for m in modes:
                tm = summary(tv[m], a.stat)
                extra = f" {b:10.1f} {h / b:7.2f} {b / tm:10.2f}" if a.baseline else ""
                print(f"  {name:10} {batch:5d} {t:7d} {m:>14} {tm:12.1f} {h:10.1f} "
                      f"{h / tm:8.2f}{extra}", flush=True)
            del runs
    print(f"# load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    sys.exit(main())
