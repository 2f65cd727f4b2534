"""The cost of calling a prepared plan from Python against the same plan run from C++.

One process, one plan (quantize of a tiny float32 tensor, so the op itself costs little):
  - C++:    the plan's run() in a C++ loop on the same arrays (Plan._seconds_per_run_in_cpp);
  - Python: plan.run(x) from a Python loop (argument checks, a new output array, the call).
The difference is what the Python binding adds per call. Medians of --repeats rounds.

  PYTHONPATH=build/python QFORGE_PLUGIN_PATH=build/bin python3 benchmarks/python/plan_overhead.py
"""

import argparse
import statistics
import time

import numpy as np

import qforge


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plugin", default="cpu_scalar")
    ap.add_argument("--elements", type=int, default=16)
    ap.add_argument("--iterations", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()

    acc = qforge.Accelerator(plugins=[args.plugin], online_tuning=False, use_cache=False)
    params = qforge.QuantizationParams.per_tensor_affine(qforge.uint8, 0.02, 128)
    plan = acc.prepare_quantize([args.elements], params)
    x = np.linspace(-1, 1, args.elements, dtype=np.float32)
    plan.run(x)

    cpp, py = [], []
    for _ in range(args.repeats):
        cpp.append(plan._seconds_per_run_in_cpp(args.iterations, x))
        run = plan.run
        start = time.perf_counter()
        for _ in range(args.iterations):
            run(x)
        py.append((time.perf_counter() - start) / args.iterations)
    c, p = statistics.median(cpp), statistics.median(py)
    print(f"plan: {plan}")
    print(f"C++ loop:    {c * 1e9:8.0f} ns per run")
    print(f"Python call: {p * 1e9:8.0f} ns per run")
    print(f"overhead:    {(p - c) * 1e9:8.0f} ns per call (median of {args.repeats} rounds of "
          f"{args.iterations})")


if __name__ == "__main__":
    main()
