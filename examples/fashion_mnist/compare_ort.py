#!/usr/bin/env python3
"""qforge against ONNX Runtime on the Fashion-MNIST models, in one run on one machine: top-1
accuracy of float and int8 (qforge's int8_static recipe; ORT's quantize_static, QDQ, per-channel
int8, MinMax, on the same first 1024 training images), the time to calibrate and quantize, and
the time of one batch of 256 test images, float and int8.

    python3 compare_ort.py --qforge build/bin/qforge --threads 2 [--json out.json]

Needs numpy and onnxruntime (the test venv: scripts/venv.sh). qforge runs as the command-line
tool with OPENBLAS_NUM_THREADS set to --threads; its cpu_x86 plugin uses every core, so compare
on a machine whose core count is --threads, or read the figures as such.

Calibration time, one timed call each. qforge, two figures, each the wall time of one
`qforge quantize` process: "calibrate s" is `--no-report -o FILE`, the like-for-like figure
against quantize_static (process start and dynamic linking, ONNX's schema registration, import
with the checker and shape inference, reading and inflating the calibration images from the
gzip'd IDX file, calibration, the quantized weights, writing the QDQ model; no plugin is loaded
and no plan made); "with report s" is `--report-batches 1 --timed-runs 1 -o FILE`, with the
tuning cache warm (a first call fills it): all of the above plus loading the plugins, the plans
and a one-batch report (one float run, two int8 runs). ORT: the wall time of the
quantize_static call in this Python process: loading and checking the model, the augmented
model's session, calibration on the images already in memory as numpy arrays, computing the
ranges, writing the QDQ model; Python's start, importing onnx (which registers ONNX's schemas)
and onnxruntime, and reading the images happen before its timer starts, and it writes no
report.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dataset import load_idx_split
from ort_baseline import Batches, batch_time, session, top1

HERE = Path(__file__).resolve().parent


def qforge(exe, *args, env):
    done = subprocess.run([exe, *map(str, args)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"qforge {' '.join(map(str, args))} failed:\n{done.stderr}")
    return done


def median_seconds(stderr):
    for line in stderr.splitlines():
        if line.startswith("median seconds per run"):
            return float(line.rsplit(":", 1)[1])
    raise ValueError("no timing in qforge's output:\n" + stderr)


def ort_side(name, data_dir, threads, calibration, repeats, train_x, test_x, test_y):
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    float_path = HERE / f"{name}.onnx"
    with tempfile.TemporaryDirectory() as tmp:
        int8_path = Path(tmp) / f"{name}_int8.onnx"
        start = time.perf_counter()
        quantize_static(str(float_path), str(int8_path), Batches(train_x[:calibration], 64),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
        seconds = time.perf_counter() - start
        f, q = session(float_path, threads), session(int8_path, threads)
        return {"float_top1": top1(f, test_x, test_y), "int8_top1": top1(q, test_x, test_y),
                "calibrate_s": seconds, "float_batch256_s": batch_time(f, test_x, repeats),
                "int8_batch256_s": batch_time(q, test_x, repeats)}


def qforge_side(exe, name, data_dir, recipe, calibration, repeats, batch_file, env):
    model = HERE / f"{name}.onnx"
    quant = ["--recipe", recipe, "--calibration", Path(data_dir) / "train-images-idx3-ubyte.gz",
             "--calibration-limit", calibration]
    ev = json.loads(qforge(exe, "eval", model, *quant, "--json", "--data",
                           Path(data_dir) / "t10k-images-idx3-ubyte.gz", "--labels",
                           Path(data_dir) / "t10k-labels-idx1-ubyte.gz", env=env).stdout)
    with tempfile.TemporaryDirectory() as tmp:
        args = ["quantize", model, *quant, "--report-batches", 1, "--timed-runs", 1,
                "-o", Path(tmp) / "qdq.onnx"]
        qforge(exe, *args, env=env)  # fills the tuning cache
        start = time.perf_counter()
        qforge(exe, *args, env=env)
        with_report = time.perf_counter() - start
        start = time.perf_counter()
        qforge(exe, "quantize", model, *quant, "--no-report", "-o", Path(tmp) / "qdq_only.onnx",
               env=env)
        seconds = time.perf_counter() - start
        run = ["run", model, "-i", batch_file, "-o", tmp, "--repeat", repeats]
        float_s = median_seconds(qforge(exe, *run, env=env).stderr)
        int8_s = median_seconds(qforge(exe, *run, *quant, env=env).stderr)
    return {"float_top1": ev["float"]["top1"], "int8_top1": ev["quantized"]["top1"],
            "agreement": ev["quantized"]["agreement"], "calibrate_s": seconds,
            "calibrate_with_report_s": with_report,
            "float_batch256_s": float_s, "int8_batch256_s": int8_s}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qforge", required=True)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--recipe", default=str(HERE / "recipes" / "int8_static.json"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calibration", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args()
    import onnxruntime
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
    train_x, _ = load_idx_split(args.data, "train")
    test_x, test_y = load_idx_split(args.data, "test")
    result = {"onnxruntime": onnxruntime.__version__, "threads": args.threads,
              "date": time.strftime("%Y-%m-%d"), "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        batch_file = Path(tmp) / "batch256.npy"
        np.save(batch_file, np.ascontiguousarray(test_x[:256]))
        for name in ("mlp", "cnn"):
            ours = qforge_side(args.qforge, name, args.data, args.recipe, args.calibration,
                               args.repeats, batch_file, env)
            theirs = ort_side(name, args.data, args.threads, args.calibration, args.repeats,
                              train_x, test_x, test_y)
            result["models"][name] = {"qforge": ours, "onnxruntime": theirs}
    print("| model | | float top-1 | int8 top-1 | calibrate s | with report s | "
          "float batch-256 ms | int8 batch-256 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name, sides in result["models"].items():
        for side, r in sides.items():
            report = r.get("calibrate_with_report_s")
            print(f"| {name} | {side} | {r['float_top1']:.4f} | {r['int8_top1']:.4f} | "
                  f"{r['calibrate_s']:.3f} | {'' if report is None else f'{report:.3f}'} | "
                  f"{r['float_batch256_s'] * 1e3:.2f} | {r['int8_batch256_s'] * 1e3:.2f} |")
        q, o = sides["qforge"], sides["onnxruntime"]
        print(f"| {name} | qforge / ORT | | {q['int8_top1'] - o['int8_top1']:+.4f} | "
              f"{q['calibrate_s'] / o['calibrate_s']:.2f}x | "
              f"{q['calibrate_with_report_s'] / o['calibrate_s']:.2f}x | "
              f"{q['float_batch256_s'] / o['float_batch256_s']:.2f}x | "
              f"{q['int8_batch256_s'] / o['int8_batch256_s']:.2f}x |")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
