"""PyTorch anchors for qforge_bench_cuda, measured in the same device run (docs/PERFORMANCE.md).

torch._int_mm (cuBLASLt int8 GEMM, int32 out, no epilogue), torch's bf16 matmul for the shapes
of the quantized linear backward, and torch.quantize_per_tensor's bandwidth. CUDA events,
median of the timed runs after warm-up, fresh random inputs.
Run: python3 benchmarks/cuda/torch_anchor.py
"""
import statistics

import torch


def median_ms(fn, warmup=3, reps=20):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    dev = torch.device("cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    for m, n, k in [(8192, 8192, 8192), (4096, 4096, 4096), (1, 8192, 8192), (16, 8192, 8192),
                    (32, 8192, 8192), (128, 8192, 8192)]:
        a = torch.randint(-127, 128, (m, k), dtype=torch.int8, device=dev)
        b = torch.randint(-127, 128, (n, k), dtype=torch.int8, device=dev).t()
        try:
            ms = median_ms(lambda: torch._int_mm(a, b))
            print(f"torch._int_mm {m}x{n}x{k}: {ms:.4f} ms {2 * m * n * k / ms / 1e9:.1f} TOPS")
        except RuntimeError as e:
            print(f"torch._int_mm {m}x{n}x{k}: not accepted ({str(e).splitlines()[0][:80]})")
    for s in (4096, 8192):
        dy = torch.randn(s, s, dtype=torch.bfloat16, device=dev)
        w = torch.randn(s, s, dtype=torch.bfloat16, device=dev)
        x = torch.randn(s, s, dtype=torch.bfloat16, device=dev)
        ms = median_ms(lambda: (dy @ w, dy.t() @ x), reps=10)
        print(f"torch bf16 backward matmuls dX, dW {s}x{s}x{s}: {ms:.4f} ms "
              f"{4 * s ** 3 / ms / 1e9:.1f} TFLOPS")
        ms = median_ms(lambda: dy @ w, reps=10)
        print(f"torch bf16 matmul {s}x{s}x{s}: {ms:.4f} ms {2 * s ** 3 / ms / 1e9:.1f} TFLOPS")
    x = torch.randn(8192, 8192, device=dev)
    ms = median_ms(lambda: torch.quantize_per_tensor(x, 0.03, 0, torch.qint8))
    print(f"torch.quantize_per_tensor f32->qint8 8192x8192: {ms:.4f} ms {x.numel() * 5 / ms / 1e6:.1f} GB/s")


if __name__ == "__main__":
    main()
