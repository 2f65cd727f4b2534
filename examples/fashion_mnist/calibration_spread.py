#!/usr/bin/env python3
"""How much the int8 accuracy of qforge and of ONNX Runtime moves with the calibration images,
and where a difference between them comes from.

For each of several disjoint slices of the training set (the first is the one compare_ort.py
uses), it quantizes a model three ways and measures top-1 on the 10 000 test images:
  - qforge: the int8 static recipe through the Python package, run by qforge;
  - qforge's QDQ export run by ONNX Runtime: qforge's params on ORT's kernels;
  - ORT's quantize_static (QDQ, per-channel int8 weights, int8 activations, MinMax), run by ORT;
  - the same ORT model without the QuantizeLinear/DequantizeLinear pair on the graph output
    (qforge's models return float logits), and how many test images have a tie between int8
    logits there (argmax then picks the lowest class index).
The first two differ only in the kernels (qforge's fused dequantization against ORT's integer
execution), the second and third in the params and the output quantization. Prints a Markdown
table.

    PYTHONPATH=build/python .venv/bin/python examples/fashion_mnist/calibration_spread.py \
        --model mlp --sets 5
"""
import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

import qforge
from dataset import load_idx_split
from ort_baseline import Batches, session, top1

HERE = Path(__file__).resolve().parent
BATCH = 128  # calibration and evaluation batch of the qforge model


def batched_top1(run, images, labels):
    """Top-1 of run(batch of BATCH images) -> logits, the last batch padded with zeros (the
    qforge model, and its QDQ export, are built for one batch size)."""
    correct = 0
    for i in range(0, len(images), BATCH):
        chunk = images[i : i + BATCH]
        n = len(chunk)
        if n < BATCH:
            chunk = np.concatenate([chunk, np.zeros((BATCH - n,) + chunk.shape[1:], chunk.dtype)])
        logits = run(chunk)
        correct += int((logits[:n].argmax(1) == labels[i : i + n]).sum())
    return correct / len(images)


def without_output_qdq(path, out_path):
    """`path` with the QuantizeLinear -> DequantizeLinear pair in front of each graph output
    removed: the node that fed QuantizeLinear writes the output itself."""
    model = onnx.load(str(path))
    g = model.graph
    outputs = {o.name for o in g.output}
    for dq in [n for n in g.node if n.op_type == "DequantizeLinear" and n.output[0] in outputs]:
        q = next((n for n in g.node if n.op_type == "QuantizeLinear" and n.output[0] == dq.input[0]),
                 None)
        if q is None:
            continue
        for n in g.node:
            for i, name in enumerate(n.output):
                if name == q.input[0]:
                    n.output[i] = dq.output[0]
        g.node.remove(q)
        g.node.remove(dq)
    onnx.save(model, str(out_path))
    return out_path


def logits(sess, images):
    return np.concatenate([sess.run(None, {"image": images[i : i + 1000]})[0]
                           for i in range(0, len(images), 1000)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--recipe", default=str(HERE / "recipes" / "int8_static.json"))
    parser.add_argument("--calibration", type=int, default=1024)
    parser.add_argument("--sets", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    float_path = HERE / f"{args.model}.onnx"
    train_x, _ = load_idx_split(args.data, "train")
    test_x, test_y = load_idx_split(args.data, "test")
    float_top1 = top1(session(float_path, args.threads), test_x, test_y)
    accelerator = qforge.Accelerator(plugins=["cpu_scalar", "cpu_x86"], online_tuning=False,
                                     use_cache=False)
    print(f"{args.model}: float top-1 {float_top1:.4f}; {args.sets} calibration sets of "
          f"{args.calibration} training images; onnxruntime {ort.__version__}; "
          f"{time.strftime('%Y-%m-%d')}\n")
    print("| calibration images | qforge | qforge's QDQ in ORT | ORT quantize_static | "
          "ORT without output Q/DQ | int8 logit ties |")
    print("|---|---|---|---|---|---|")
    rows = []
    for s in range(args.sets):
        lo, hi = s * args.calibration, (s + 1) * args.calibration
        images = train_x[lo:hi]
        batches = [{"image": images[i : i + BATCH]} for i in range(0, len(images), BATCH)]
        model = qforge.quantize_model(float_path, args.recipe, batches, accelerator=accelerator,
                                      report_batches=0)
        ours = batched_top1(lambda x: next(iter(model.run({"image": x}).values())), test_x,
                            test_y)
        with tempfile.TemporaryDirectory() as tmp:
            qdq = model.export_onnx(Path(tmp) / "qforge_qdq.onnx")
            sess = session(qdq, args.threads)
            ours_in_ort = batched_top1(lambda x: sess.run(None, {"image": x})[0], test_x, test_y)
            ort_path = Path(tmp) / "ort_qdq.onnx"
            quantize_static(str(float_path), str(ort_path), Batches(images, 64),
                            quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                            calibrate_method=CalibrationMethod.MinMax)
            theirs_logits = logits(session(ort_path, args.threads), test_x)
            theirs = float((theirs_logits.argmax(1) == test_y).mean())
            ties = int(((theirs_logits == theirs_logits.max(1, keepdims=True)).sum(1) > 1).sum())
            stripped = without_output_qdq(ort_path, Path(tmp) / "ort_qdq_float_out.onnx")
            theirs_float_out = top1(session(stripped, args.threads), test_x, test_y)
        rows.append((ours, ours_in_ort, theirs, theirs_float_out))
        print(f"| {lo}-{hi - 1} | {ours:.4f} | {ours_in_ort:.4f} | {theirs:.4f} | "
              f"{theirs_float_out:.4f} | {ties} |", flush=True)
    a = np.array(rows)
    mean, spread = a.mean(0), a.max(0) - a.min(0)
    print("| mean | " + " | ".join(f"{v:.4f}" for v in mean) + " | |")
    print("| max - min | " + " | ".join(f"{v:.4f}" for v in spread) + " | |")


if __name__ == "__main__":
    main()
