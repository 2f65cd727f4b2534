#!/usr/bin/env python3
"""How long quantizing MiniLM takes with each recipe: qforge_minilm_embed on one sentence
(a batch of one, so the run is almost all loading the model, calibrating and quantizing the 36
weights), the recipes alternated round after round so that a busy machine weighs on all of
them alike. Prints each recipe's wall time and calibration time (from the program's standard
error) over the rounds, and the wall time as a ratio to the first recipe's in the same round.

    python3 bench_quantize_time.py --embed build/bin/qforge_minilm_embed \\
        --model build/minilm/minilm.onnx --rounds 3 \\
        --recipes recipes/int4_block32_weight_only.json recipes/int4_block32_weight_only_gptq.json

Calibration: the 64 sentences evaluate.py calibrates on (those of sentence_pairs.py's text that
no evaluation pair uses), in two batches of 32 as evaluate.py's runs do (--batch 32).
"""
import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from build_onnx import model_dir
from sentence_pairs import all_sentences, sentence_pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embed", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--recipes", type=Path, nargs="+", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    directory = model_dir()
    used = {s for p in sentence_pairs(600) for s in p}
    calibration = [s for s in all_sentences() if s not in used][:64]
    times = {r.stem: [] for r in args.recipes}
    calib = {r.stem: [] for r in args.recipes}
    ratios = {r.stem: [] for r in args.recipes}
    with tempfile.TemporaryDirectory() as tmp:
        text, cal = Path(tmp) / "one.txt", Path(tmp) / "calibration.txt"
        text.write_text(calibration[0] + "\n", encoding="utf-8")
        cal.write_text("\n".join(calibration) + "\n", encoding="utf-8")
        for _ in range(args.rounds):
            anchor = None
            for recipe in args.recipes:
                cmd = [str(args.embed), "--model", str(args.model), "--vocab",
                       str(directory / "vocab.txt"), "--input", str(text), "--output",
                       str(Path(tmp) / "e.npy"), "--batch", "32", "--recipe", str(recipe),
                       "--calibration-sentences", str(cal)]
                start = time.perf_counter()
                done = subprocess.run(cmd, capture_output=True, text=True)
                wall = time.perf_counter() - start
                if done.returncode != 0:
                    sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
                m = re.search(r"calibration: .*, ([0-9.]+) s", done.stderr)
                times[recipe.stem].append(wall)
                calib[recipe.stem].append(float(m.group(1)) if m else 0.0)
                anchor = anchor or wall
                ratios[recipe.stem].append(wall / anchor)
                print(f"{recipe.stem}: {wall:.2f} s (calibration {calib[recipe.stem][-1]:.1f} s)",
                      flush=True)
    print(f"\n| recipe | wall time, {args.rounds} rounds (s) | of which calibration (s) | "
          f"ratio to {args.recipes[0].stem} |\n|---|---|---|---|")
    for r in args.recipes:
        t, c, q = times[r.stem], calib[r.stem], ratios[r.stem]
        print(f"| {r.stem} | {min(t):.2f}-{max(t):.2f} | {min(c):.1f}-{max(c):.1f} | "
              f"{min(q):.1f}-{max(q):.1f} |")


if __name__ == "__main__":
    main()
