#!/usr/bin/env python3
"""End to end: qforge_minilm_embed (C++ WordPiece + qforge's float executor) against Hugging
Face `tokenizers` + ONNX Runtime on the same graph, on the sentences of sentences.py.

    python3 check_embed.py --embed build/bin/qforge_minilm_embed --model build/minilm/minilm.onnx

Exits non-zero when a sentence's cosine is below --min-cosine or an element differs by more
than --atol.
"""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

from build_onnx import model_dir
from sentences import SENTENCES, encode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embed", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args()
    directory = model_dir()
    ids, mask = encode(directory, SENTENCES, max_length=128)
    sess = ort.InferenceSession(str(args.model), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "sentences.txt"
        # One sentence a line: the embed program reads lines, so line breaks inside a sentence
        # are written as spaces (the tokenizer treats both as whitespace).
        text.write_text("\n".join(s.replace("\n", " ").replace("\r", " ") for s in SENTENCES)
                        + "\n", encoding="utf-8")
        out = Path(tmp) / "embeddings.npy"
        done = subprocess.run([str(args.embed), "--model", str(args.model), "--vocab",
                               str(directory / "vocab.txt"), "--input", str(text), "--output",
                               str(out), "--batch", "5", "--max-length", "128"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"qforge_minilm_embed failed ({done.returncode}):\n{done.stderr}")
        got = np.load(out)
    if got.shape != want.shape:
        sys.exit(f"FAILED: qforge gives {got.shape}, ORT {want.shape}")
    cos = (got * want).sum(-1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(want, axis=-1))
    err = np.abs(got - want).max()
    print(f"{len(SENTENCES)} sentences: min cosine qforge vs ORT {cos.min():.8f}, "
          f"max |difference| {err:.2e}")
    if cos.min() < args.min_cosine or err > args.atol:
        sys.exit(f"FAILED: min cosine {cos.min()} < {args.min_cosine} or max error {err} > "
                 f"{args.atol}")


if __name__ == "__main__":
    main()
