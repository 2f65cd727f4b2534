#!/usr/bin/env python3
"""Time before the first batch and the whole run's CPU, with a warm tuning cache, for two builds
alternated: qforge_minilm_embed (MiniLM dynamic_int8) and `qforge run` on the Fashion-MNIST models.

    python3 benchmarks/python/startup_time.py --before OLD/bin --after build/bin \
        --minilm-dir build/minilm --vocab VOCAB.txt --fm-data DIR [--rounds 3] [--threads 2]

Each build gets its own cache file (warmed by one run first, not counted), so both answer from
a warm cache. "to first batch" is the time from the start of the process to the start of the
first batch: the moment its "batch ... ms" line appeared, less the milliseconds it reports.
CPU is the child's user + system time (wait4).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TEXT = ("Quantization maps float32 weights to int8 with a per-channel scale, and the embedding "
        "of a sentence should barely move. ") * 10


def run(cmd, env):
    """(wall s, cpu s, s to the first batch or None, stderr)"""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=env)
    first, lines = None, []
    for line in p.stderr:
        lines.append(line)
        m = re.match(r"batch .*: ([0-9.]+) ms", line)
        if m and first is None:
            first = time.perf_counter() - start - float(m.group(1)) / 1e3
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{''.join(lines)}")
    return wall, usage.ru_utime + usage.ru_stime, first, "".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, required=True)
    ap.add_argument("--minilm-dir", type=Path, required=True)
    ap.add_argument("--vocab", type=Path, required=True)
    ap.add_argument("--fm-data", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import numpy as np  # only here, so that --help works without it

    tmp = Path(tempfile.mkdtemp(prefix="qforge-startup-"))
    sentences = tmp / "sentences.txt"
    sentences.write_text("\n".join(f"{i} {TEXT}" for i in range(64)) + "\n", encoding="utf-8")
    import gzip
    raw = gzip.open(args.fm_data / "t10k-images-idx3-ubyte.gz").read()
    images = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 1, 28, 28)[:64]
    np.save(tmp / "x64.npy", images.astype(np.float32) / 255.0)
    t = str(args.threads)
    fm = REPO / "examples" / "fashion_mnist"

    def commands(bin_dir, out):
        return {
            "minilm dynamic_int8": [
                bin_dir / "qforge_minilm_embed", "--model", args.minilm_dir / "minilm_native.onnx",
                "--vocab", args.vocab, "--input", sentences, "--batch", "32", "--max-length",
                "128", "--recipe", REPO / "examples/minilm/recipes/dynamic_int8.json",
                "--output", out / "e.npy"],
            "fashion-mnist mlp int8_static": [
                bin_dir / "qforge", "run", fm / "mlp.onnx", "-i", tmp / "x64.npy", "-o", out,
                "--recipe", fm / "recipes/int8_static.json", "--calibration",
                args.fm_data / "train-images-idx3-ubyte.gz", "--calibration-limit", "1024"],
            "fashion-mnist cnn int8_static": [
                bin_dir / "qforge", "run", fm / "cnn.onnx", "-i", tmp / "x64.npy", "-o", out,
                "--recipe", fm / "recipes/int8_static.json", "--calibration",
                args.fm_data / "train-images-idx3-ubyte.gz", "--calibration-limit", "1024"],
        }

    builds = {"before": args.before, "after": args.after}
    envs = {}
    for name, bin_dir in builds.items():
        envs[name] = dict(os.environ, QFORGE_MODEL_THREADS=t, QFORGE_CPU_X86_THREADS=t,
                          OPENBLAS_NUM_THREADS=t, OMP_NUM_THREADS=t,
                          QFORGE_PLUGIN_PATH=str(bin_dir),
                          QFORGE_TUNING_CACHE=str(tmp / f"{name}.json"))
        if (bin_dir.parent / "lib").is_dir():  # a copied build: its own libraries, not RUNPATH's
            envs[name]["LD_LIBRARY_PATH"] = str(bin_dir.parent / "lib")
        (tmp / name).mkdir()
        for cmd in commands(bin_dir, tmp / name).values():
            run(cmd, envs[name])  # warms this build's cache
    results = {}
    for r in range(args.rounds):
        for name, bin_dir in builds.items():
            for case, cmd in commands(bin_dir, tmp / name).items():
                wall, cpu, first, _ = run(cmd, envs[name])
                results.setdefault((case, name), []).append((wall, cpu, first))
    print(f"{args.rounds} rounds, before/after alternated, {t} threads, warm tuning caches")
    print(f"{'case':32} {'build':7} {'wall s':>20} {'cpu s':>20} {'to first batch s':>20}")
    fmt = lambda v: "-" if v[0] is None else f"{min(v):.2f}-{max(v):.2f}"
    for (case, name), rows in results.items():
        cols = list(zip(*rows))
        print(f"{case:32} {name:7} {fmt(cols[0]):>20} {fmt(cols[1]):>20} {fmt(cols[2]):>20}")


if __name__ == "__main__":
    main()
