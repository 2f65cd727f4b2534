#!/usr/bin/env python3
"""Speed of the quantized MiniLM, batch x 128 tokens, in one run: ONNX Runtime float and its
quantize_dynamic model (per tensor, its default; and per channel), its MatMulNBits model
(int4, blocks of 32, when onnx_ir is importable), and qforge_minilm_embed
float and with each recipe of recipes/. ORT runs on --threads intra-op threads; qforge's float
ops use OpenBLAS on --threads threads and its quantized MatMuls the cpu_x86 plugin (its thread
pool: the physical core count). Medians of --repeat batches after a warm-up; qforge's are its
executor times (tokenisation, calibration and set-up excluded). The static recipes calibrate
on the benchmark batch itself (speed does not depend on the ranges' values).

    python3 bench_quant.py --embed build/bin/qforge_minilm_embed --model build/minilm/minilm.onnx
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic

from bench_float import TEXT
from build_onnx import model_dir
from evaluate import ort_matmul_nbits
from sentences import encode

HERE = Path(__file__).resolve().parent


def time_ort(model, feed, threads, repeat):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    sess.run(None, feed)  # warm-up
    ms = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sess.run(None, feed)
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms)


def time_qforge(args, directory, text, calibration, recipe=None):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
    cmd = [str(args.embed), "--model", str(args.model), "--vocab", str(directory / "vocab.txt"),
           "--input", str(text), "--output", str(text.with_suffix(".npy")), "--batch",
           str(args.batch), "--max-length", "128"]
    if recipe:
        cmd += ["--recipe", str(recipe), "--calibration-sentences", str(calibration)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    # The first batch of an executor is the warm-up.
    return statistics.median(
        [float(m) for m in re.findall(r"tokens: ([0-9.]+) ms", done.stderr)][1:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embed", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--recipes", type=Path, nargs="*",
                    default=sorted((HERE / "recipes").glob("*.json")))
    args = ap.parse_args()
    directory = model_dir()
    sentences = [f"{i} {TEXT}" for i in range(args.batch)]
    ids, mask = encode(directory, sentences, max_length=128)
    feed = {"input_ids": ids, "attention_mask": mask}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        results.append(("ORT float", time_ort(args.model, feed, args.threads, args.repeat)))
        for per_channel in (False, True):
            path = tmp / f"dynamic_{per_channel}.onnx"
            quantize_dynamic(str(args.model), str(path), weight_type=QuantType.QInt8,
                             per_channel=per_channel)
            name = "per channel" if per_channel else "per tensor"
            results.append((f"ORT quantize_dynamic ({name})",
                            time_ort(path, feed, args.threads, args.repeat)))
        nbits = ort_matmul_nbits(args.model, tmp / "matmul_nbits_b32.onnx", 32)
        if nbits:
            results.append(("ORT MatMulNBits (int4, block 32)",
                            time_ort(nbits, feed, args.threads, args.repeat)))
        text, calibration = tmp / "bench.txt", tmp / "calibration.txt"
        text.write_text("\n".join(sentences * (args.repeat + 1)) + "\n", encoding="utf-8")
        calibration.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        results.append(("qforge float", time_qforge(args, directory, text, calibration)))
        for recipe in args.recipes:
            results.append((f"qforge {recipe.stem}",
                             time_qforge(args, directory, text, calibration, recipe)))
    anchor = results[1][1]
    print(f"batch {ids.shape[0]} x {ids.shape[1]} tokens, {args.threads} threads, median of "
          f"{args.repeat}, onnxruntime {ort.__version__}\n")
    print("| model | ms per batch | / ORT quantize_dynamic (per tensor) |\n|---|---|---|")
    for name, ms in results:
        print(f"| {name} | {ms:.1f} | {ms / anchor:.2f} |")


if __name__ == "__main__":
    main()
