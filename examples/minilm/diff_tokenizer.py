#!/usr/bin/env python3
"""Differential check of the C++ WordPiece against Hugging Face `tokenizers`: random strings
mixing vocabulary words with characters of many Unicode blocks (--texts of them, seed printed),
and, with --every-code-point, each code point from U+0020 to U+2FFFF alone between two letters.
The C++ side is `qforge_minilm_embed --ids`. Prints how many differ and the first few.

    python3 diff_tokenizer.py --embed build/bin/qforge_minilm_embed [--seed N] [--every-code-point]

Differences are expected only for code points whose Unicode category is newer than the tables
of `tokenizers` (assigned or re-categorised from Unicode 8.0 on; docs/MINILM.md); exits 1 when
--strict and any differ.
"""
import argparse
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from build_onnx import model_dir
from sentences import tokenizer

BLOCKS = [(0x20, 0x7F), (0xA0, 0x250), (0x300, 0x370), (0x370, 0x500), (0x590, 0x700),
          (0x900, 0x980), (0xE00, 0xE80), (0x1E00, 0x1F00), (0x2000, 0x2070), (0x20A0, 0x2200),
          (0x3000, 0x3100), (0x4E00, 0x4F00), (0xAC00, 0xAD00), (0xFB00, 0xFB50),
          (0xFF00, 0xFFF0), (0x1F300, 0x1F700), (0x1, 0x20), (0xE000, 0xE010),
          (0x10000, 0x10100), (0x20000, 0x20100)]


def random_texts(rng, vocab, count):
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randrange(1, 12)):
            if rng.random() < 0.4:
                w = rng.choice(vocab)
                parts.append(w.upper() if rng.random() < 0.3 else w)
            else:
                lo, hi = rng.choice(BLOCKS)
                parts.append("".join(chr(rng.randrange(lo, hi)) for _ in range(rng.randrange(1, 8))))
            parts.append(rng.choice([" ", "", "  ", "\t", "-", "."]))
        texts.append("".join(parts))
    return texts


def cpp_ids(embed, vocab_path, texts):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "texts.txt"
        path.write_bytes("\n".join(texts).encode("utf-8") + b"\n")
        done = subprocess.run([str(embed), "--vocab", str(vocab_path), "--ids", "--input",
                               str(path), "--max-length", "512"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"qforge_minilm_embed --ids failed:\n{done.stderr}")
    return [[int(x) for x in line.split()] for line in done.stdout.splitlines()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embed", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--texts", type=int, default=3000)
    ap.add_argument("--every-code-point", action="store_true")
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    directory = model_dir()
    vocab = (directory / "vocab.txt").read_text(encoding="utf-8").splitlines()
    texts = random_texts(random.Random(seed), vocab, args.texts)
    if args.every_code_point:
        texts += [f"a{chr(c)}b" for c in range(0x20, 0x30000) if not 0xD800 <= c <= 0xDFFF]
    # Lines are the C++ side's unit: line breaks inside a text become spaces on both sides
    # (\n and \r are whitespace to both tokenizers).
    texts = [t.replace("\n", " ").replace("\r", " ") for t in texts]
    want = [e.ids for e in tokenizer(directory, 512).encode_batch(texts)]
    got = cpp_ids(args.embed, directory / "vocab.txt", texts)
    if len(got) != len(texts):
        sys.exit(f"qforge_minilm_embed --ids gave {len(got)} lines for {len(texts)} texts")
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    print(f"seed {seed}: {len(texts)} texts, {len(bad)} differ")
    for t, g, w in bad[:5]:
        print(f"  {t[:70]!r}\n    qforge     {[vocab[i] for i in g][:12]}\n"
              f"    tokenizers {[vocab[i] for i in w][:12]}")
    if args.strict and bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
