#!/usr/bin/env python3
"""Checks the exported MiniLM graph: ONNX Runtime on it against a plain numpy forward pass of
the same safetensors weights (BERT as transformers' BertModel computes it, then
sentence-transformers' mean pooling and normalisation), on the sentences of sentences.py.

    python3 check_numpy.py --model build/minilm/minilm.onnx

Exits non-zero when any sentence's cosine is below --min-cosine or an element differs by more
than --atol.
"""
import argparse
import math
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from safetensors.numpy import load_file

from build_onnx import HEAD_DIM, HEADS, LAYERS, LN_EPS, model_dir
from sentences import SENTENCES, encode


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def layer_norm(x, w, p):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * w[f"{p}.weight"] + w[f"{p}.bias"]


def linear(x, w, p):
    return x @ w[f"{p}.weight"].T + w[f"{p}.bias"]


def forward(w, ids, mask):
    """float64 reference of BertModel + mean pooling + L2 normalisation."""
    b, s = ids.shape
    h = (w["embeddings.word_embeddings.weight"][ids] +
         w["embeddings.position_embeddings.weight"][np.arange(s)][None] +
         w["embeddings.token_type_embeddings.weight"][0])
    h = layer_norm(h, w, "embeddings.LayerNorm")
    bias = np.where(mask[:, None, None, :] == 0, -np.inf, 0.0)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"

        def split(t):
            return t.reshape(b, s, HEADS, HEAD_DIM).transpose(0, 2, 1, 3)

        q = split(linear(h, w, f"{p}.attention.self.query"))
        k = split(linear(h, w, f"{p}.attention.self.key"))
        v = split(linear(h, w, f"{p}.attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(HEAD_DIM) + bias
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, HEADS * HEAD_DIM)
        h = layer_norm(linear(ctx, w, f"{p}.attention.output.dense") + h, w,
                       f"{p}.attention.output.LayerNorm")
        inter = linear(h, w, f"{p}.intermediate.dense")
        inter = 0.5 * inter * (1.0 + erf(inter / math.sqrt(2.0)))
        h = layer_norm(linear(inter, w, f"{p}.output.dense") + h, w, f"{p}.output.LayerNorm")
    m = mask[..., None].astype(np.float64)
    mean = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return mean / np.maximum(np.linalg.norm(mean, axis=-1, keepdims=True), 1e-12)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=Path("build/minilm/minilm.onnx"))
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args()
    directory = model_dir()
    w = {k: v.astype(np.float64) if v.dtype in (np.float32, np.float16) else v
         for k, v in load_file(str(directory / "model.safetensors")).items()}
    ids, mask = encode(directory)
    want = forward(w, ids, mask)
    sess = ort.InferenceSession(str(args.model), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    cos = (got * want).sum(-1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(want, axis=-1))
    err = np.abs(got - want).max()
    for s, c in zip(SENTENCES, cos):
        print(f"cosine {c:.8f}  {s[:60]!r}")
    print(f"{len(SENTENCES)} sentences, batch {ids.shape}: min cosine {cos.min():.8f}, "
          f"max |ORT - numpy| {err:.2e}")
    if cos.min() < args.min_cosine or err > args.atol:
        sys.exit(f"FAILED: min cosine {cos.min()} < {args.min_cosine} or max error {err} > "
                 f"{args.atol}")


if __name__ == "__main__":
    main()
