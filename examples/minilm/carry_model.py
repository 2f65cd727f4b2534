#!/usr/bin/env python3
"""A small copy of the model folder and of bench_torch.py's sentences, for a machine that
reaches no registry (the GPU host) and takes a limited carry.

The weights are stored in float16 (bench_torch.py runs them in float32, as it runs the package's
files), and the rows of the word-embedding table of tokens that no sentence written here uses
are zeroed, so that gzip shrinks them to almost nothing: every embedding row those sentences
read is the package's (rounded to float16), so the model computes on them exactly what the
full float16 copy computes. sentences.json holds the sentences (bench_torch.py --sentences), so
that the other machine evaluates these ones, whatever its Python's documentation holds.

    python3 examples/minilm/carry_model.py --out /tmp/minilm-carry
    tar czf minilm.tgz -C /tmp minilm-carry
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_onnx import model_dir  # noqa: E402
from sentence_pairs import all_sentences, sentence_pairs  # noqa: E402
from sentences import tokenizer  # noqa: E402

WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pairs", type=int, default=600)
    ap.add_argument("--calibration", type=int, default=64)
    args = ap.parse_args()

    directory = model_dir()
    pairs = sentence_pairs(args.pairs)
    sentences = sorted({s for p in pairs for s in p})
    evaluated = set(sentences)
    spare = [s for s in all_sentences() if s not in evaluated][:args.calibration]
    tok = tokenizer(directory, 128)
    used = {0}  # the padding id
    for s in sentences + spare:
        used.update(tok.encode(s).ids)

    args.out.mkdir(parents=True, exist_ok=True)
    for f in directory.iterdir():
        if f.is_file() and f.name != "model.safetensors":
            shutil.copy2(f, args.out / f.name)
        elif f.is_dir():
            shutil.copytree(f, args.out / f.name, dirs_exist_ok=True)
    weights = load_file(str(directory / "model.safetensors"))
    key = next(k for k in weights if k.endswith(WORD_EMBEDDINGS))
    keep = np.zeros(weights[key].shape[0], bool)
    keep[sorted(used)] = True
    weights[key] = np.where(keep[:, None], weights[key], 0)
    save_file({k: v.astype(np.float16) for k, v in weights.items()},
              str(args.out / "model.safetensors"))
    (args.out / "sentences.json").write_text(json.dumps({"evaluate": sentences,
                                                         "spare": spare}))
    print(f"{len(sentences)} sentences, {len(spare)} spare, {len(used)} of {len(keep)} "
          f"word-embedding rows kept; written to {args.out}")


if __name__ == "__main__":
    main()
