"""Host microseconds per call of the pieces of one qforge.torch QuantizedLinear forward on CUDA
tensors (768 -> 3072, batch 32, static uint8 activations), each in a loop with nothing waited
for (best of 5 loops of 2000 calls), beside torch's own nn.Linear: the layer's whole forward,
torch.empty, the stream queries, the chained plans alone, each plan through Plan.run_dlpack and
one DLPack exchange. Runs against older qforge.torch layers too (no _DeviceChain: those rows are
left out).

  PYTHONPATH=<package> QFORGE_PLUGIN_PATH=<plugins> python3 benchmarks/python/torch_cuda_layer.py
"""
import copy
import sys
import time
from pathlib import Path

import torch

import qforge
import qforge.torch as qt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_mlp import recipe  # noqa: E402


def per_call(fn, n=2000):
    """Host microseconds per call: the best of 5 loops of n calls, the GPU drained between."""
    fn()
    torch.cuda.synchronize()
    best = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best.append((time.perf_counter() - start) / n)
        torch.cuda.synchronize()
    return min(best) * 1e6


def main():
    h, b = 768, 32
    lin = torch.nn.Sequential(torch.nn.Linear(h, 4 * h)).eval()
    q = copy.deepcopy(lin)
    qt.quantize_(q, recipe("static"), calibration_loader=[torch.randn(b, h)],
                 accelerator=qforge.Accelerator(plugins=["cpu_scalar"]))
    q = q.to("cuda")
    lin = lin.to("cuda")
    layer = q[0]
    layer._accelerator = qforge.Accelerator(plugins=["cuda"])
    layer._plans = {}
    x = torch.randn(b, h, device="cuda")
    with torch.no_grad():
        layer(x)
        print(f"torch nn.Linear f32 forward: {per_call(lambda: lin(x)):.2f} us")
        print(f"qforge QuantizedLinear forward: {per_call(lambda: layer(x)):.2f} us")
        print(f"torch.empty(32, 3072): "
              f"{per_call(lambda: torch.empty(b, 4 * h, device='cuda')):.2f} us")
        print(f"torch.cuda.current_stream(0): "
              f"{per_call(lambda: torch.cuda.current_stream(0)):.2f} us")
        run = next(v for k, v in layer._plans.items() if isinstance(k, tuple))
        chained = hasattr(run, "chain")
        if chained:
            y = torch.empty(b, 4 * h, device="cuda")
            xp, yp = x.data_ptr(), y.data_ptr()
            print(f"_DeviceChain.run alone: {per_call(lambda: run.chain.run(xp, yp)):.2f} us")
            print(f"_current_stream_id: {per_call(lambda: qt._current_stream_id(0)):.2f} us")
            qp, mp = run.plans
        else:
            qp, mp = run
        a = torch.empty(b, h, dtype=torch.int8 if chained else torch.uint8, device="cuda")
        y = torch.empty(b, 4 * h, device="cuda")
        print(f"quantize plan run_dlpack: {per_call(lambda: qp.run_dlpack([x], [a])):.2f} us")
        print(f"matmul plan run_dlpack: {per_call(lambda: mp.run_dlpack([a], [y])):.2f} us")
        print(f"x.__dlpack__(stream=1): {per_call(lambda: x.__dlpack__(stream=1)):.2f} us")
        print("plans:", run)


if __name__ == "__main__":
    main()
