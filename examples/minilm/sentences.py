"""The sentences the MiniLM checks run on, and their tokenisation by Hugging Face's `tokenizers`
with the package's tokenizer.json (the reference the C++ WordPiece is held to)."""
import numpy as np

# Plain English, punctuation, accents, digits, CJK, odd whitespace and a sentence long enough
# to be cut at the maximum length.
SENTENCES = [
    "This is an example sentence.",
    "Each sentence is converted into a fixed-size vector.",
    "The quick brown fox jumps over the lazy dog!",
    "Héllo, Wörld — naïve café résumé (façade) à la carte.",
    "Don't stop believing: it's 3.14159 or 42%, isn't it?",
    "東京は日本の首都です and 北京 is China's capital.",
    "  Leading   and trailing\twhitespace\nwith a newline.  ",
    "Unbelievably, antidisestablishmentarianism tokenizes into many wordpieces.",
    "e-mail me at someone@example.com or visit https://example.org/path?q=1&r=2",
    "ÀÉÎÕÜ ÇÑ ß æœ ø Ångström",
    "A",
    "",
    "Quantization maps float32 weights to int8 with a per-channel scale, and the "
    "embedding of a sentence should barely move: this sentence repeats to be long. "
    * 8,
]


def tokenizer(directory, max_length=128):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tok.enable_truncation(max_length=max_length)
    tok.no_padding()  # tokenizer.json pads to 128; encode() pads to the longest sentence
    return tok


def encode(directory, sentences=SENTENCES, max_length=128):
    """input_ids and attention_mask [len(sentences), longest] int64, padded with 0."""
    tok = tokenizer(directory, max_length)
    encs = [tok.encode(s) for s in sentences]
    width = max(len(e.ids) for e in encs)
    ids = np.zeros((len(encs), width), np.int64)
    mask = np.zeros((len(encs), width), np.int64)
    for i, e in enumerate(encs):
        ids[i, : len(e.ids)] = e.ids
        mask[i, : len(e.ids)] = 1
    return ids, mask
