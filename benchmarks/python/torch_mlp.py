"""A torch MLP with qforge int8 Linear layers against the same model in float32, in bfloat16 and
under torch.ao.quantization.quantize_dynamic, on the CPU, in one run: time per batch (median) and
the output error against float32 (relative L2 norm).

The model is a transformer feed-forward block's shape (hidden -> 4*hidden -> hidden, GELU) so the
matmuls dominate. qforge's layers run through qforge.torch.quantize_ (dynamic uint8 activations,
int8 per-channel weights; and static activations calibrated on a few batches).

  PYTHONPATH=build/python QFORGE_PLUGIN_PATH=build/bin python3 benchmarks/python/torch_mlp.py
"""

import argparse
import copy
import statistics
import time

import torch

import qforge
import qforge.torch as qt


def recipe(mode):
    return {"format": "qforge.recipe", "version": 1, "rules": [{
        "match": {"op_types": ["Linear"]},
        "weights": {"dtype": "int8", "mapping": "symmetric", "granularity": "per_channel"},
        "activations": {"mode": mode, "dtype": "uint8", "mapping": "affine",
                        **({"calibration": {"method": "minmax"}} if mode == "static" else {})}}]}


def seconds_per_batch(model, x, repeats):
    with torch.no_grad():
        model(x)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--plugins", nargs="*", help="qforge plugins (default: every loaded one)")
    args = ap.parse_args()

    torch.manual_seed(0)
    h = args.hidden
    ref_model = torch.nn.Sequential(torch.nn.Linear(h, 4 * h), torch.nn.GELU(),
                                    torch.nn.Linear(4 * h, h)).eval()
    x = torch.randn(args.batch, h)
    calibration = [torch.randn(args.batch, h) for _ in range(4)] + [x]
    with torch.no_grad():
        ref = ref_model(x)

    bf16 = copy.deepcopy(ref_model).to(torch.bfloat16)
    ao = torch.ao.quantization.quantize_dynamic(copy.deepcopy(ref_model), {torch.nn.Linear},
                                                dtype=torch.qint8)
    acc = qforge.Accelerator(plugins=args.plugins)
    q_dyn = copy.deepcopy(ref_model)
    qt.quantize_(q_dyn, recipe("dynamic"), accelerator=acc)
    q_static = copy.deepcopy(ref_model)
    qt.quantize_(q_static, recipe("static"), calibration_loader=calibration, accelerator=acc)

    rows = [("float32 (torch)", ref_model, x), ("bfloat16 (torch)", bf16, x.to(torch.bfloat16)),
            ("torch.ao quantize_dynamic int8", ao, x),
            ("qforge int8, dynamic activations", q_dyn, x),
            ("qforge int8, static activations", q_static, x)]
    print(f"MLP {h}->{4 * h}->{h} GELU, batch {args.batch}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch threads, qforge plugins {acc.plugins}")
    base = None
    print(f"| model | ms per batch | vs float32 | rel. L2 error |")
    print(f"|---|---|---|---|")
    for name, model, inp in rows:
        t = seconds_per_batch(model, inp, args.repeats)
        base = base or t
        with torch.no_grad():
            out = model(inp).float()
        err = float(torch.linalg.norm(out - ref) / torch.linalg.norm(ref))
        print(f"| {name} | {t * 1e3:.3f} | {base / t:.2f}x | {err:.2e} |")
    for name, layer in q_static.named_modules():
        for plan in getattr(layer, "_plans", {}).values():
            print(f"static layer {name}: {plan}")


if __name__ == "__main__":
    main()
