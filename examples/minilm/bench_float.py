#!/usr/bin/env python3
"""Float speed of the MiniLM graph, qforge against ONNX Runtime, batch x 128 tokens, in one run:
ORT's session on --threads intra-op threads, and qforge_minilm_embed with OPENBLAS_NUM_THREADS
set to --threads (its per-batch executor time; tokenisation and set-up excluded). Medians of
--repeat batches.

    python3 bench_float.py --embed build/bin/qforge_minilm_embed --model build/minilm/minilm.onnx
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

from build_onnx import model_dir
from sentences import encode

# Long enough that every sentence is cut at 128 tokens.
TEXT = ("Quantization maps float32 weights to int8 with a per-channel scale, and the embedding "
        "of a sentence should barely move. ") * 10


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embed", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    directory = model_dir()
    sentences = [f"{i} {TEXT}" for i in range(args.batch)]
    ids, mask = encode(directory, sentences, max_length=128)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(args.model), opts, providers=["CPUExecutionProvider"])
    feed = {"input_ids": ids, "attention_mask": mask}
    sess.run(None, feed)  # warm-up
    ort_ms = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        sess.run(None, feed)
        ort_ms.append((time.perf_counter() - t0) * 1e3)
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "sentences.txt"
        # One batch more than measured: the first run of an executor is the warm-up.
        text.write_text("\n".join(sentences * (args.repeat + 1)) + "\n", encoding="utf-8")
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
        done = subprocess.run([str(args.embed), "--model", str(args.model), "--vocab",
                               str(directory / "vocab.txt"), "--input", str(text), "--output",
                               str(Path(tmp) / "e.npy"), "--batch", str(args.batch),
                               "--max-length", "128"], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            sys.exit(done.stderr)
    qf_ms = [float(m) for m in re.findall(r"tokens: ([0-9.]+) ms", done.stderr)][1:]
    q, o = statistics.median(qf_ms), statistics.median(ort_ms)
    print(f"batch {ids.shape[0]} x {ids.shape[1]} tokens, {args.threads} threads, median of "
          f"{args.repeat}: qforge float {q:.1f} ms, ONNX Runtime {ort.__version__} float "
          f"{o:.1f} ms, ratio {q / o:.2f}")


if __name__ == "__main__":
    main()
