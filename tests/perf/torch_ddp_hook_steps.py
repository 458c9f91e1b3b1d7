#!/usr/bin/python3
"""torch_ddp_hook_steps.py: one rank of PyTorch 1.13 DDP (gloo, CPU, 1 thread) training
a WideResNet on Fashion-MNIST (padded to 32x32, as cifar_ddp) for a number of steps,
with no comm hook or with torch's powerSGD_hook; rank 0 prints the mean step time
of the steps after --warmup. The peer of cifar_ddp --comm-hook in
tests/perf/powersgd_netns_bench.sh, which starts one process per emulated node:

  torch_ddp_hook_steps.py --rank R --world 2 --master 10.86.0.1 --model wrn-16-4 \
      --batch-size 32 --steps 24 --warmup 4 --hook powersgd:4:2

--hook none | fp16 | powersgd:RANK:START (start_powerSGD_iter; torch needs >= 2 with
error feedback and warm start). Same model definition and data as
cifar_ddp_vs_torch.py (imported from it)."""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cifar_ddp_vs_torch import WideResNet, fashion  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--master", required=True)
    ap.add_argument("--port", type=int, default=29533)
    ap.add_argument("--model", default="wrn-16-4")
    ap.add_argument("--batch-size", type=int, default=32, help="global")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--hook", default="none")
    a = ap.parse_args()
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = a.master, str(a.port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=a.rank, world_size=a.world)
    torch.manual_seed(42)
    depth, k = map(int, a.model.split("-")[1:])
    model = nn.parallel.DistributedDataParallel(WideResNet(depth, k, 1))
    if a.hook == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif a.hook.startswith("powersgd"):
        _, r, start = a.hook.split(":")
        state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=int(r),
                                   start_powerSGD_iter=int(start))
        model.register_comm_hook(state, psgd.powerSGD_hook)
    elif a.hook != "none":
        sys.exit(f"unknown --hook {a.hook}")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    local = a.batch_size // a.world
    x, y = fashion("train", local * a.world * a.steps)
    times = []
    for s in range(a.steps):
        b = slice((s * a.world + a.rank) * local, (s * a.world + a.rank + 1) * local)
        t0 = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x[b]), y[b]).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    if a.rank == 0:
        t = times[a.warmup:]
        print(f"torch {a.model} hook {a.hook}: {1e3 * sum(t) / len(t):.1f} ms per step "
              f"(mean of steps {a.warmup + 1}-{a.steps})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
