"""Anchors for the vulkan figures on the GPU host, timed with CUDA events (medians after warm-up):
torch._int_mm (cuBLASLt int8 tensor-core GEMM, int32 out) at M = N = K, and a device-to-device
copy of 1.25 GiB (the bytes a 256 Mi-element quantize moves), counting bytes read plus written.
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


def copy_bandwidth(nbytes=5 * (256 << 20) // 2, reps=20):
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    t = times[len(times) // 2]
    print(f"torch device copy {nbytes >> 20} MiB: {t * 1e3:.3f} ms, {2 * nbytes / t / 1e9:.1f} GB/s")


copy_bandwidth()
for size in (int(v) for v in sys.argv[1:] or ["4096", "8192"]):
    bench(size)
