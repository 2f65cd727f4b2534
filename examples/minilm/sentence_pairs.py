"""Real English sentence pairs that every Python install has offline: the prose of Python's own
reference documentation (the standard library's pydoc_data.topics, what `help('topic')` shows;
on Debian in libpython3.x-stdlib).

Sentences are the documentation's prose lines joined into paragraphs and cut at sentence ends;
code, tables and short fragments are left out. Pairs: each sentence with the next one of its
topic (related text) and, as many, with a sentence drawn at random from elsewhere (unrelated
text), so that the pairs' similarities spread over the whole range. No similarity labels: the
evaluation compares the similarity each quantized model gives a pair with the float model's.

    python sentence_pairs.py --pairs 600 --out pairs.tsv      # sentence_a <TAB> sentence_b
"""
import argparse
import random
import re
import sys

import pydoc_data.topics

_END = re.compile(r"(?<=[a-z0-9)][.!?])\s+(?=[A-Z])")
_CODE = re.compile(r"[{}\[\]=<>|_`*]|::|\.\.\.|\(\)")


def paragraphs(text):
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        # Indented blocks are code samples, grammar and tables in this text.
        if not lines or any(line.startswith((" ", "\t")) for line in lines):
            continue
        yield " ".join(line.strip() for line in lines)


def sentences_of(paragraph):
    out = []
    for s in _END.split(paragraph):
        words = s.split()
        if 8 <= len(words) <= 45 and s[0].isupper() and s.endswith(".") and not _CODE.search(s):
            out.append(s)
    return out


def topic_runs():
    """Each topic's sentences, in order, topics sorted by name."""
    return [[s for p in paragraphs(pydoc_data.topics.topics[t]) for s in sentences_of(p)]
            for t in sorted(pydoc_data.topics.topics)]


def all_sentences():
    """Every sentence once, in topic order."""
    return list(dict.fromkeys(s for run in topic_runs() for s in run))


def sentence_pairs(count, seed=0):
    """`count` pairs (a, b): half neighbours in a topic, half drawn at random."""
    runs = topic_runs()
    every = sorted({s for run in runs for s in run})
    neighbours = sorted({(run[i], run[i + 1]) for run in runs for i in range(len(run) - 1)})
    rng = random.Random(seed)
    rng.shuffle(neighbours)
    near = neighbours[: count - count // 2]
    if len(near) < count - count // 2:
        sys.exit(f"only {len(near)} neighbouring pairs in pydoc_data; asked {count}")
    far = [(rng.choice(every), rng.choice(every)) for _ in range(count // 2)]
    return near + far


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    with open(a.out, "w", encoding="utf-8") as f:
        for x, y in sentence_pairs(a.pairs, a.seed):
            f.write(f"{x}\t{y}\n")


if __name__ == "__main__":
    main()
