"""A torch MLP with qforge int8 Linear layers against the same model in float32, in bfloat16 and
under torch.ao.quantization.quantize_dynamic, on the CPU, in one run: time per batch (median) and
the output error against float32 (relative L2 norm). With --device cuda: the model on the GPU in
float32 and bfloat16 against qforge's static and dynamic int8 layers on the cuda plugin (CUDA
tensors in place, docs/PYTHON.md), the error against the float32 model on the CPU, and the
host's time per batch when nothing waits for the GPU (what queuing a batch costs the CPU).

The model is a transformer feed-forward block's shape (hidden -> 4*hidden -> hidden, GELU) so the
matmuls dominate. qforge's layers run through qforge.torch.quantize_ (dynamic uint8 activations,
int8 per-channel weights; and static activations calibrated on a few batches).

  PYTHONPATH=build/python QFORGE_PLUGIN_PATH=build/bin python3 benchmarks/python/torch_mlp.py
  ... torch_mlp.py --device cuda --batch 512
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
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    with torch.no_grad():
        model(x)
        sync()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            model(x)
            sync()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def host_seconds_per_batch(model, x, repeats):
    """CUDA: the host's time per forward with nothing waited for (the kernels queue behind),
    over `repeats` forwards back to back: what launching a batch costs the CPU."""
    with torch.no_grad():
        model(x)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(repeats):
            model(x)
        elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
    return elapsed / repeats


def cuda_rows(ref_model, x, calibration, plugins):
    """The GPU comparison: torch float32 and bfloat16 on cuda, qforge int8 on cuda with static
    activations and with dynamic ones (each batch's range, codes and params on the device, the
    matmul plan taking them at run)."""
    gpu = copy.deepcopy(ref_model).to("cuda")
    bf16 = copy.deepcopy(ref_model).to("cuda", torch.bfloat16)
    acc = qforge.Accelerator(plugins=plugins or ["cuda"])
    q_static = copy.deepcopy(ref_model)
    # Calibrated on the CPU (the observers read host memory), then moved to the GPU.
    qt.quantize_(q_static, recipe("static"), calibration_loader=calibration,
                 accelerator=qforge.Accelerator(plugins=["cpu_x86", "cpu_scalar"]))
    q_static = q_static.to("cuda")
    q_dynamic = copy.deepcopy(ref_model)
    qt.quantize_(q_dynamic, recipe("dynamic"), accelerator=acc)
    q_dynamic = q_dynamic.to("cuda")
    for model in (q_static, q_dynamic):
        for layer in model.modules():
            if isinstance(layer, qt.QuantizedLinear):
                layer._accelerator = acc
                layer._plans = {}
    xc = x.to("cuda")
    return acc, [("float32 (torch, cuda)", gpu, xc),
                 ("bfloat16 (torch, cuda)", bf16, xc.to(torch.bfloat16)),
                 ("qforge int8, static activations (cuda plugin)", q_static, xc),
                 ("qforge int8, dynamic activations (cuda plugin)", q_dynamic, xc)], q_static


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--plugins", nargs="*", help="qforge plugins (default: every loaded one)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args()

    torch.manual_seed(0)
    h = args.hidden
    ref_model = torch.nn.Sequential(torch.nn.Linear(h, 4 * h), torch.nn.GELU(),
                                    torch.nn.Linear(4 * h, h)).eval()
    x = torch.randn(args.batch, h)
    calibration = [torch.randn(args.batch, h) for _ in range(4)] + [x]
    with torch.no_grad():
        ref = ref_model(x)

    if args.device == "cuda":
        acc, rows, q_static = cuda_rows(ref_model, x, calibration, args.plugins)
        where = torch.cuda.get_device_name()
    else:
        bf16 = copy.deepcopy(ref_model).to(torch.bfloat16)
        ao = torch.ao.quantization.quantize_dynamic(copy.deepcopy(ref_model), {torch.nn.Linear},
                                                    dtype=torch.qint8)
        acc = qforge.Accelerator(plugins=args.plugins)
        q_dyn = copy.deepcopy(ref_model)
        qt.quantize_(q_dyn, recipe("dynamic"), accelerator=acc)
        q_static = copy.deepcopy(ref_model)
        qt.quantize_(q_static, recipe("static"), calibration_loader=calibration, accelerator=acc)
        rows = [("float32 (torch)", ref_model, x),
                ("bfloat16 (torch)", bf16, x.to(torch.bfloat16)),
                ("torch.ao quantize_dynamic int8", ao, x),
                ("qforge int8, dynamic activations", q_dyn, x),
                ("qforge int8, static activations", q_static, x)]
        where = f"{torch.get_num_threads()} torch threads"
    print(f"MLP {h}->{4 * h}->{h} GELU, batch {args.batch}, torch {torch.__version__}, "
          f"{where}, qforge plugins {acc.plugins}")
    base = None
    cuda = args.device == "cuda"
    print("| model | ms per batch | vs float32 | rel. L2 error |" +
          (" host ms per batch, no sync |" if cuda else ""))
    print("|---|---|---|---|" + ("---|" if cuda else ""))
    for name, model, inp in rows:
        t = seconds_per_batch(model, inp, args.repeats)
        base = base or t
        with torch.no_grad():
            out = model(inp).float()
        out = out.cpu()
        err = float(torch.linalg.norm(out - ref) / torch.linalg.norm(ref))
        host = (f" {host_seconds_per_batch(model, inp, args.repeats) * 1e3:.3f} |" if cuda
                else "")
        print(f"| {name} | {t * 1e3:.3f} | {base / t:.2f}x | {err:.2e} |{host}")
    for name, layer in q_static.named_modules():
        for plan in getattr(layer, "_plans", {}).values():
            print(f"static layer {name}: {plan}")


if __name__ == "__main__":
    main()
