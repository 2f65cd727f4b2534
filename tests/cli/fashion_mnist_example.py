"""The Fashion-MNIST example end to end (examples/fashion_mnist), as a user runs it: `qforge
quantize` writes the QDQ model, the report and the chart; `qforge eval` gives float and
quantized accuracy on a slice of the test set; ONNX Runtime runs the QDQ model and predicts what
`qforge run` predicts for the same images.

Usage: fashion_mnist_example.py QFORGE_EXE SOURCE_DIR WORK_DIR. Needs numpy and onnxruntime (the
test venv, scripts/venv.sh); prints "skipped: ..." and exits 0 without them or without the
dataset (Debian's dataset-fashion-mnist).
"""
import json
import subprocess
import sys
from pathlib import Path

DATA = Path("/usr/share/datasets/fashion-mnist")
SLICE = 1000  # test images for the accuracy check
BATCH = 64  # the QDQ model's fixed batch (calibration batch)


def main():
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        print(f"skipped: {e.name} is not installed (scripts/venv.sh makes the test venv)")
        return 0
    if not (DATA / "t10k-images-idx3-ubyte.gz").exists():
        print(f"skipped: {DATA} is missing (Debian package dataset-fashion-mnist)")
        return 0
    qforge, source, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    example = source / "examples" / "fashion_mnist"
    sys.path.insert(0, str(example))
    from dataset import load_idx_split

    model = example / "cnn.onnx"
    recipe = example / "recipes" / "int8_static.json"
    quantization = ["--recipe", str(recipe), "--calibration",
                    str(DATA / "train-images-idx3-ubyte.gz"), "--calibration-limit", "256",
                    "--batch-size", str(BATCH)]

    def run(*args):
        done = subprocess.run([qforge, *map(str, args)], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"qforge {' '.join(map(str, args))} failed:\n{done.stderr}")
        return done.stdout

    qdq, report, chart = work / "cnn_qdq.onnx", work / "report.json", work / "sqnr.svg"
    run("quantize", model, *quantization, "-o", qdq, "--report", report, "--chart", chart)
    layers = json.loads(report.read_text())["layers"]
    assert [l["op_type"] for l in layers] == ["Conv"] * 3 + ["Gemm"] * 2, layers
    # Each layer's SQNR is against the float model, so it carries the error of every quantized
    # layer before it: the third conv (behind two quantized ones) measured 25-28 dB.
    assert all(l["sqnr_db"] is None or l["sqnr_db"] > 20 for l in layers), layers
    assert chart.read_text().startswith("<svg"), "the chart is not an SVG"

    ev = json.loads(run("eval", model, *quantization, "--data",
                        DATA / "t10k-images-idx3-ubyte.gz", "--labels",
                        DATA / "t10k-labels-idx1-ubyte.gz", "--limit", SLICE, "--json"))
    print(json.dumps(ev))
    assert ev["samples"] == SLICE
    assert ev["float"]["top1"] > 0.85, "the float model should classify most test images"
    assert abs(ev["quantized"]["top1"] - ev["float"]["top1"]) <= 0.02, ev
    assert ev["quantized"]["agreement"] >= 0.97, ev

    images, _ = load_idx_split(DATA, "test")
    batch = np.ascontiguousarray(images[:BATCH])
    np.save(work / "images.npy", batch)
    run("run", model, *quantization, "--input", f"image={work / 'images.npy'}",
        "--output-dir", work / "out")
    ours = np.load(work / "out" / "logits.npy")
    options = ort.SessionOptions()
    # ORT's basic optimisations keep each QDQ op as ONNX defines it (docs/MODEL.md, "The check
    # against ONNX Runtime").
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    session = ort.InferenceSession(str(qdq), options, providers=["CPUExecutionProvider"])
    theirs = session.run(None, {"image": batch})[0]
    differ = int((ours.argmax(1) != theirs.argmax(1)).sum())
    print(f"qforge vs ONNX Runtime on the QDQ model: {differ} of {BATCH} predictions differ, "
          f"largest logit difference {float(np.abs(ours - theirs).max()):.3g}")
    assert differ == 0, "ONNX Runtime's predictions on the exported model differ from qforge's"
    return 0


if __name__ == "__main__":
    sys.exit(main())
