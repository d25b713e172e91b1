"""Where PyTorch's CUDA training steps spend GPU time: the MLP and CNN steps of
`steps_torch.py` under `torch.profiler`, a table of kernels per workload (GPU time per step)
and the GPU time of a whole step against its wall time. Run on a GPU machine next to
`ncu` over adjoint's steps bench (docs/cuda.md, "Profiling") to compare kernel by kernel."""
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

from steps_torch import cnn, mlp

STEPS = 20


def report(name, step):
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(STEPS):
        step()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - start) / STEPS
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(STEPS):
            step()
        torch.cuda.synchronize()
    events = prof.key_averages()
    gpu = sum(e.self_device_time_total for e in events) / STEPS
    print(f"== torch {name}: wall {wall * 1e6:.1f} us a step, GPU busy {gpu:.1f} us a step")
    rows = sorted(events, key=lambda e: -e.self_device_time_total)
    for e in rows:
        if e.self_device_time_total <= 0:
            continue
        print(f"{e.self_device_time_total / STEPS:9.1f} us  {e.count // STEPS:3d}x  {e.key[:110]}")
    sys.stdout.flush()


def main():
    torch.manual_seed(0)
    gpu = torch.device("cuda")
    report("mlp", mlp(gpu))
    report("cnn", cnn(gpu))


if __name__ == "__main__":
    main()
