#!/usr/bin/env python3
"""PyTorch dynamic-int8 nn.Linear on the issue-4 shapes, for comparison with cpu_x86.

For each quantized engine PyTorch has (fbgemm, x86, onednn), quantize_dynamic turns an
nn.Linear(K, N) into int8 weights (per-tensor symmetric) and quantizes each [M, K] input on the
fly; the time of one forward call (median after warm-up) gives GOPS = 2*M*N*K / t. This times a
little more than qforge_bench_cpu_gemm does (activation quantization is included), so the ratio
flatters PyTorch by at most that O(M*K) share. Like the C++ benchmark, calls rotate among copies
of the layer so that one pass over the weights (about 256 MiB in all) cannot be served from the
caches. Run on the same machine, right after the C++ benchmark.
"""
import argparse
import os
import statistics
import time

import torch


def median_time(fn, min_time=0.3, min_runs=5):
    fn(0)
    times = []
    total = 0.0
    while total < min_time or len(times) < min_runs:
        t0 = time.perf_counter()
        fn(len(times) + 1)
        t = time.perf_counter() - t0
        times.append(t)
        total += t
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--min-time", type=float, default=0.3)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    shapes = [(1, 4096, 4096), (16, 4096, 4096), (128, 4096, 4096), (2048, 4096, 4096),
              (1024, 1024, 1024), (2048, 2048, 2048)]
    engines = [e for e in ("fbgemm", "x86", "onednn") if e in torch.backends.quantized.supported_engines]
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, engines {engines}")
    rows = []
    for m, n, k in shapes:
        x = torch.randn(m, k)
        lin = torch.nn.Linear(k, n)
        copies = max(1, min(16, (256 << 20) // (n * k) + 1))
        row = [f"{m}x{n}x{k}"]
        for e in engines:
            torch.backends.quantized.engine = e
            qs = [torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear},
                                                         dtype=torch.qint8) for _ in range(copies)]
            with torch.inference_mode():
                t = median_time(lambda i: qs[i % copies](x), args.min_time)
            gops = 2.0 * m * n * k / t * 1e-9
            row.append(f"{gops:.1f}")
            print(f"torch dynamic int8 Linear {m}x{n}x{k} engine {e}: {gops:.1f} GOPS", flush=True)
        rows.append(row)
    print()
    print("shape MxNxK       " + "".join(f"{e + ' GOPS':<14}" for e in engines))
    for row in rows:
        print(f"{row[0]:<18}" + "".join(f"{v:<14}" for v in row[1:]))


if __name__ == "__main__":
    main()
