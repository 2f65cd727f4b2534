"""Anchor for the vulkan GEMM figures on the GPU host: torch._int_mm (cuBLASLt int8 tensor-core
GEMM, int32 out) at M = N = K, timed with CUDA events (median of repeats after warm-up).
Usage: python3 torch_int8_anchor.py 4096 8192"""
import sys

import torch


def bench(s, reps=20):
    a = torch.randint(-128, 127, (s, s), dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 127, (s, s), dtype=torch.int8, device="cuda").t()  # column-major B
    for _ in range(3):
        torch._int_mm(a, b)
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch._int_mm(a, b)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    t = times[len(times) // 2]
    print(f"torch._int_mm {s}^3: {t * 1e3:.3f} ms, {2 * s ** 3 / t / 1e9:.1f} GOPS")


for size in (int(v) for v in sys.argv[1:] or ["4096", "8192"]):
    bench(size)
