#!/usr/bin/env python3
"""Writes what qforge's MiniLM test compares against: the graph (native and decomposed
LayerNormalization) and, as ONNX test data (TensorProto files), the tokenised sentences of
sentences.py and ONNX Runtime's float embeddings of them.

    python3 make_reference.py --out build/minilm

Writes OUT/minilm_native.onnx, OUT/minilm_decomposed.onnx and OUT/test_data_set_0/{input_0.pb,
input_1.pb, output_0.pb}; each file atomically.
"""
import argparse
import os
import tempfile
from pathlib import Path

import onnxruntime as ort
from onnx import numpy_helper

from build_onnx import build_model, model_dir, save_atomically
from sentences import encode


def write_tensor(array, name, path):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    os.fchmod(fd, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(numpy_helper.from_array(array, name).SerializeToString())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("build/minilm"))
    args = ap.parse_args()
    ids, mask = encode(model_dir())
    data = args.out / "test_data_set_0"
    data.mkdir(parents=True, exist_ok=True)
    outputs = {}
    for layernorm in ("native", "decomposed"):
        path = args.out / f"minilm_{layernorm}.onnx"
        save_atomically(build_model(layernorm), path)
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        outputs[layernorm] = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    write_tensor(ids, "input_ids", data / "input_0.pb")
    write_tensor(mask, "attention_mask", data / "input_1.pb")
    # The native graph's output is the reference; the decomposed one matches it (checked here).
    diff = abs(outputs["native"] - outputs["decomposed"]).max()
    if diff > 1e-5:
        raise SystemExit(f"native and decomposed LayerNormalization differ by {diff}")
    write_tensor(outputs["native"], "sentence_embedding", data / "output_0.pb")
    print(f"wrote {args.out}: batch {ids.shape}, ORT embeddings {outputs['native'].shape}")


if __name__ == "__main__":
    main()
