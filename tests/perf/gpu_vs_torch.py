#!/usr/bin/env python3
"""gpu_vs_torch.py: training images/second on one GPU, hv's trainer against PyTorch
on the same model, batch, synthetic data already on the device, and step: forward,
mean cross-entropy, backward, SGD (momentum 0.9, weight decay 5e-4), batch norm in
training mode. The PyTorch side is the classic train_ddp.py shape: the model wrapped
in DistributedDataParallel (NCCL backend, world of one rank), and with --amp autocast
to float16 plus GradScaler. The hv side is bench_trainer with its cuda argument
(float32) and cuda-amp (mixed precision: float16 NHWC activations, GradScaler's
policy). Both sides are timed after warm-up steps, in the same run. A benchmark, not
a test.

  python3 tests/perf/gpu_vs_torch.py --bench build/tests/trainer/bench_trainer \
      --models wrn-16-4 --batch 512
"""
import argparse
import os
import re
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_pytorch import WideResNet  # noqa: E402


def torch_images_per_s(name, batch, steps, warmup, amp):
    depth, k = map(int, name.split("-")[1:])
    torch.manual_seed(1)
    model = WideResNet(depth, k).cuda()
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    x = torch.randn(batch, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    for s in range(warmup + steps):
        if s == warmup:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - t0)


def hv_images_per_s(bench, name, batch, steps, warmup, amp):
    out = subprocess.run([bench, name, str(batch), str(steps), str(warmup), "cuda-amp" if amp else "cuda"],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"images_per_s=([0-9.]+)", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", required=True, help="bench_trainer executable")
    ap.add_argument("--models", default="wrn-16-4")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.backends.cudnn.benchmark = True
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}, cudnn "
          f"{torch.backends.cudnn.version()}; batch {a.batch}, {a.steps} steps after {a.warmup}")
    print(f"{'model':10} {'hv fp32':>10} {'torch fp32':>11} {'ratio':>6} {'hv amp':>10} {'torch amp':>10} "
          f"{'ratio':>6}  (training images/s)")
    for name in a.models.split(","):
        hv32 = hv_images_per_s(a.bench, name, a.batch, a.steps, a.warmup, False)
        t32 = torch_images_per_s(name, a.batch, a.steps, a.warmup, False)
        hv16 = hv_images_per_s(a.bench, name, a.batch, a.steps, a.warmup, True)
        t16 = torch_images_per_s(name, a.batch, a.steps, a.warmup, True)
        print(f"{name:10} {hv32:10.0f} {t32:11.0f} {hv32 / t32:6.2f} {hv16:10.0f} {t16:10.0f} {hv16 / t16:6.2f}",
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
