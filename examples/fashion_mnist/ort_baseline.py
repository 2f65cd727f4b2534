#!/usr/bin/env python3
"""ONNX Runtime's side of the Fashion-MNIST comparison: float and int8 accuracy, calibration
time and batch-256 inference time of ORT's own static quantization of the same models.

ORT quantizes with quantize_static (QDQ, per-channel int8 weights, int8 activations, MinMax)
on the first N training images; accuracy is top-1 on the test set. Prints JSON.

    python3 ort_baseline.py --models . --data /usr/share/datasets/fashion-mnist --threads 2
"""
import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)

from dataset import load_idx_split


class Batches(CalibrationDataReader):
    def __init__(self, images, batch):
        self.batches = iter([{"image": images[i : i + batch]}
                             for i in range(0, len(images), batch)])

    def get_next(self):
        return next(self.batches, None)


def session(path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def top1(sess, images, labels):
    correct = 0
    for i in range(0, len(images), 1000):
        logits = sess.run(None, {"image": images[i : i + 1000]})[0]
        correct += int((logits.argmax(1) == labels[i : i + 1000]).sum())
    return correct / len(images)


def batch_time(sess, images, repeats):
    """Median seconds of `repeats` runs on the first 256 images after a warm-up: the same
    statistic `qforge run --repeat` prints, so the two sides compare like with like."""
    batch = images[:256]
    sess.run(None, {"image": batch})
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        sess.run(None, {"image": batch})
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=str(Path(__file__).parent))
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calibration", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    train_x, _ = load_idx_split(args.data, "train")
    test_x, test_y = load_idx_split(args.data, "test")
    result = {"onnxruntime": ort.__version__, "threads": args.threads}
    for name in ("cnn", "mlp"):
        float_path = Path(args.models) / f"{name}.onnx"
        with tempfile.TemporaryDirectory() as tmp:
            int8_path = Path(tmp) / f"{name}_int8.onnx"
            start = time.perf_counter()
            quantize_static(str(float_path), str(int8_path),
                            Batches(train_x[: args.calibration], 64),
                            quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                            calibrate_method=CalibrationMethod.MinMax)
            calibration_s = time.perf_counter() - start
            float_sess = session(float_path, args.threads)
            int8_sess = session(int8_path, args.threads)
            result[name] = {
                "float_top1": top1(float_sess, test_x, test_y),
                "int8_top1": top1(int8_sess, test_x, test_y),
                "quantize_static_s": calibration_s,
                "float_batch256_s": batch_time(float_sess, test_x, args.repeats),
                "int8_batch256_s": batch_time(int8_sess, test_x, args.repeats),
            }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
