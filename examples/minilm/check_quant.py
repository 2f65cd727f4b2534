#!/usr/bin/env python3
"""qforge_minilm_embed with each recipe of recipes/ against tokenizers + ONNX Runtime's float
embeddings, on the sentences of sentences.py (the static recipes calibrated on 32 sentences of
sentence_pairs.py's text). A smoke test of the quantized path: the quality figures on 600 pairs
are evaluate.py's.

    python3 check_quant.py --embed build/bin/qforge_minilm_embed --model build/minilm/minilm.onnx

Exits non-zero when a recipe's mean or minimum cosine is below its floor: int8 recipes mean
0.98, min 0.95; int4 ones (int4 weights with uint8 activations, measured about 0.95 and 0.90
here, or weight-only) mean 0.93, min 0.85.
"""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from build_onnx import model_dir
from evaluate import HERE, normalise, ort_embed, qforge_embed
from sentence_pairs import all_sentences
from sentences import SENTENCES


def floors(recipe):
    """(mean, min) cosine a recipe must reach on the 13 sentences."""
    return (0.93, 0.85) if recipe.startswith("int4") else (0.98, 0.95)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embed", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    args = ap.parse_args()
    args.batch = 16
    directory = model_dir()
    # One sentence a line, as the embed program reads them.
    sentences = [s.replace("\n", " ").replace("\r", " ") for s in SENTENCES]
    want = normalise(ort_embed(args.model, sentences, directory, args.batch))
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        text, calib = Path(tmp) / "sentences.txt", Path(tmp) / "calibration.txt"
        text.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        calib.write_text("\n".join(all_sentences()[:32]) + "\n", encoding="utf-8")
        for recipe in sorted((HERE / "recipes").glob("*.json")):
            got = normalise(qforge_embed(args, directory, text, Path(tmp) / "e.npy", recipe,
                                         calib))
            cos = (got * want).sum(-1)
            print(f"{recipe.stem}: {len(sentences)} sentences, cosine to float mean "
                  f"{cos.mean():.5f}, min {cos.min():.5f}")
            mean_floor, min_floor = floors(recipe.stem)
            if cos.mean() < mean_floor or cos.min() < min_floor:
                failed.append(f"{recipe.stem} (floors: mean {mean_floor}, min {min_floor})")
        # A recipe that needs calibration data (GPTQ's Hessians) without any is refused.
        recipe = HERE / "recipes" / "int4_block32_weight_only_gptq.json"
        done = subprocess.run([str(args.embed), "--model", str(args.model), "--vocab",
                               str(directory / "vocab.txt"), "--input", str(text), "--output",
                               str(Path(tmp) / "e.npy"), "--recipe", str(recipe)],
                              capture_output=True, text=True)
        if done.returncode == 0 or "rounds weights with gptq" not in done.stderr:
            failed.append(f"{recipe.stem} without --calibration-sentences was not refused "
                          f"(exit {done.returncode}): {done.stderr.strip()}")
        else:
            print(f"{recipe.stem} without calibration: refused ({done.stderr.strip()})")
    if failed:
        sys.exit(f"FAILED: below the floors: {', '.join(failed)}")


if __name__ == "__main__":
    main()
