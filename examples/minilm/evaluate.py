#!/usr/bin/env python3
"""Quality of the quantized MiniLM on real sentence pairs: each recipe of recipes/ run by
qforge_minilm_embed, and ONNX Runtime's quantize_dynamic (per tensor, its default, and per
channel) and MatMulNBits (int4 blocks of 32, float activations) as the anchors, all against
the float graph on the same sentences.

    python3 evaluate.py --embed build/bin/qforge_minilm_embed --model build/minilm/minilm.onnx

The pairs come from sentence_pairs.py (Python's own documentation, offline everywhere); the
calibration sentences of the static recipes are other sentences of the same text. For each
model: the mean and minimum cosine between its embedding of a sentence and the float one, and
the Spearman correlation between the similarities it gives the pairs and those the float model
gives (the pairs carry no human labels). The float reference is ONNX Runtime on `tokenizers`'
ids; qforge's float run is checked against it too.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic

from build_onnx import model_dir
from sentence_pairs import all_sentences, sentence_pairs
from sentences import encode

HERE = Path(__file__).resolve().parent


def ort_embed(model, sentences, directory, batch):
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    out = []
    for i in range(0, len(sentences), batch):
        ids, mask = encode(directory, sentences[i:i + batch], max_length=128)
        out.append(sess.run(None, {"input_ids": ids, "attention_mask": mask})[0])
    return np.concatenate(out)


def qforge_embed(args, directory, text, out, recipe=None, calibration=None):
    cmd = [str(args.embed), "--model", str(args.model), "--vocab", str(directory / "vocab.txt"),
           "--input", str(text), "--output", str(out), "--batch", str(args.batch),
           "--max-length", "128"]
    if recipe:
        cmd += ["--recipe", str(recipe)]
    if calibration:
        cmd += ["--calibration-sentences", str(calibration)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    return np.load(out)


def ort_matmul_nbits(model, out, block_size):
    """ONNX Runtime's weight-only int4 (MatMulNBits, com.microsoft): every MatMul with a constant
    B, blocks of `block_size` along K with a zero point per block (its default, asymmetric),
    accuracy level unset (float activations). Needs the onnx_ir package; None without it."""
    try:
        import onnx
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    except ImportError as e:
        print(f"ORT MatMulNBits skipped: {e}", flush=True)
        return None
    q = MatMulNBitsQuantizer(onnx.load(str(model)), bits=4, block_size=block_size,
                             is_symmetric=False, accuracy_level=None)
    q.process()
    q.model.save_model_to_file(str(out), use_external_data_format=False)
    return out


def ranks(x):
    r = np.empty(len(x))
    r[np.argsort(x, kind="stable")] = np.arange(len(x))
    return r


def spearman(a, b):
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def normalise(e):
    return e / np.linalg.norm(e, axis=-1, keepdims=True)


def quality(name, got, want, index_a, index_b):
    g, w = normalise(got), normalise(want)
    cos = (g * w).sum(-1)
    sim_want = (w[index_a] * w[index_b]).sum(-1)
    sim_got = (g[index_a] * g[index_b]).sum(-1)
    return {"model": name, "mean_cosine": float(cos.mean()), "min_cosine": float(cos.min()),
            "spearman_pairs": spearman(sim_got, sim_want),
            "max_pair_similarity_change": float(np.abs(sim_got - sim_want).max())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embed", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--pairs", type=int, default=600)
    ap.add_argument("--calibration", type=int, default=64, help="calibration sentences")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--recipes", type=Path, nargs="*",
                    default=sorted((HERE / "recipes").glob("*.json")))
    ap.add_argument("--ort", nargs="*", default=["per_tensor", "per_channel", "matmul_nbits"],
                    choices=["per_tensor", "per_channel", "matmul_nbits"],
                    help="ONNX Runtime anchors to run (quantize_dynamic per tensor / per channel, "
                         "MatMulNBits int4 block 32)")
    ap.add_argument("--work", type=Path, help="keep the ORT models and embeddings here")
    ap.add_argument("--json", type=Path, help="write the table as JSON too")
    args = ap.parse_args()
    directory = model_dir()
    pairs = sentence_pairs(args.pairs)
    sentences = sorted({s for p in pairs for s in p})
    index = {s: i for i, s in enumerate(sentences)}
    index_a = np.array([index[a] for a, _ in pairs])
    index_b = np.array([index[b] for _, b in pairs])
    spare = [s for s in all_sentences() if s not in index]
    if len(spare) < args.calibration:
        sys.exit(f"only {len(spare)} sentences left for calibration; asked {args.calibration}")
    calibration = spare[:args.calibration]
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        text, calib = work / "sentences.txt", work / "calibration.txt"
        text.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        calib.write_text("\n".join(calibration) + "\n", encoding="utf-8")
        print(f"{len(pairs)} pairs, {len(sentences)} sentences, {len(calibration)} calibration "
              f"sentences; onnxruntime {ort.__version__}", flush=True)
        want = ort_embed(args.model, sentences, directory, args.batch)
        rows = [quality("qforge float", qforge_embed(args, directory, text, work / "float.npy"),
                        want, index_a, index_b)]
        for recipe in args.recipes:
            got = qforge_embed(args, directory, text, work / f"{recipe.stem}.npy", recipe, calib)
            rows.append(quality(f"qforge {recipe.stem}", got, want, index_a, index_b))
            print(rows[-1], flush=True)
        for per_channel in (False, True):
            if ("per_channel" if per_channel else "per_tensor") not in args.ort:
                continue
            name = "ort_dynamic_" + ("per_channel" if per_channel else "per_tensor")
            path = work / f"{name}.onnx"
            quantize_dynamic(str(args.model), str(path), weight_type=QuantType.QInt8,
                             per_channel=per_channel)
            got = ort_embed(path, sentences, directory, args.batch)
            rows.append(quality(f"ORT quantize_dynamic ({name[12:].replace('_', ' ')})", got,
                                want, index_a, index_b))
            print(rows[-1], flush=True)
        if "matmul_nbits" in args.ort:
            path = ort_matmul_nbits(args.model, work / "ort_matmul_nbits_b32.onnx", 32)
            if path:
                got = ort_embed(path, sentences, directory, args.batch)
                rows.append(quality("ORT MatMulNBits (int4, block 32, asymmetric)", got, want,
                                    index_a, index_b))
                print(rows[-1], flush=True)
    print("\n| model | mean cosine | min cosine | Spearman of pair similarities | max pair "
          "similarity change |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['mean_cosine']:.5f} | {r['min_cosine']:.5f} | "
              f"{r['spearman_pairs']:.5f} | {r['max_pair_similarity_change']:.4f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
