#!/usr/bin/env python3
"""`qforge quantize -v` on the Fashion-MNIST models for two builds alternated: each run's wall
and CPU time and its stages, medians and ranges over the rounds.

    python3 benchmarks/python/quantize_stages.py --before OLD/qforge --before-lib OLD/lib \
        --before-plugins OLD/plugins --after build/bin/qforge [--rounds 12] [--threads 2]

Modes: "report" is `--report-batches 1 --timed-runs 1 -o FILE` (what compare_ort.py timed until
`--no-report`), "no-report" is `--no-report -o FILE` (the like-for-like figure against ORT's
quantize_static); a build whose `qforge quantize --help` has no --no-report runs "report" only.
Each round runs every (model, mode, build) once, the builds alternated, their order swapped
every other round. Each build has its own tuning cache, warmed by one run first (not counted).
CPU is the child's user + system time (wait4); stage times are what -v prints. The load average
(/proc/loadavg) is printed at the start and end of each round.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
FM = REPO / "examples" / "fashion_mnist"


def run(cmd, env):
    """(wall ms, cpu ms, {stage: ms})"""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=env)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - start) * 1e3
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{err}")
    stages = {}
    for line in err.splitlines():
        m = re.match(r"\s+(.*\S)\s+([0-9.]+)$", line)
        if m:
            stages[m.group(1)] = float(m.group(2))
    return wall, (usage.ru_utime + usage.ru_stime) * 1e3, stages


def load():
    return Path("/proc/loadavg").read_text().split()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--before-lib", help="LD_LIBRARY_PATH of the before build")
    ap.add_argument("--before-plugins", help="QFORGE_PLUGIN_PATH of the before build")
    ap.add_argument("--after", required=True)
    ap.add_argument("--after-lib")
    ap.add_argument("--after-plugins")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--modes", default="report,no-report")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="quantize-stages-"))
    builds = {}
    for side in ("before", "after"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads),
                   QFORGE_TUNING_CACHE=str(tmp / f"{side}-tuning.json"))
        if getattr(args, f"{side}_lib"):
            env["LD_LIBRARY_PATH"] = getattr(args, f"{side}_lib")
        if getattr(args, f"{side}_plugins"):
            env["QFORGE_PLUGIN_PATH"] = getattr(args, f"{side}_plugins")
        exe = getattr(args, side)
        help_text = subprocess.run([exe, "quantize", "--help"], capture_output=True, text=True,
                                   env=env).stdout
        modes = [m for m in args.modes.split(",")
                 if m == "report" or (m == "no-report" and "--no-report" in help_text)]
        builds[side] = (exe, env, modes)

    def command(exe, model, mode):
        base = [exe, "quantize", FM / f"{model}.onnx", "--recipe",
                FM / "recipes" / "int8_static.json", "--calibration",
                Path(args.data) / "train-images-idx3-ubyte.gz", "--calibration-limit", 1024, "-v",
                "-o", tmp / f"{model}-{mode}.onnx"]
        extra = ["--no-report"] if mode == "no-report" else ["--report-batches", 1,
                                                             "--timed-runs", 1]
        return list(map(str, base + extra))

    models = args.models.split(",")
    for side, (exe, env, modes) in builds.items():  # fills each tuning cache
        for model in models:
            run(command(exe, model, modes[0]), env)
    results = {}
    for r in range(args.rounds):
        start_load = load()
        sides = list(builds) if r % 2 == 0 else list(reversed(builds))
        for model in models:
            for mode in args.modes.split(","):
                for side in sides:
                    exe, env, modes = builds[side]
                    if mode in modes:
                        results.setdefault((model, mode, side), []).append(
                            run(command(exe, model, mode), env))
        print(f"round {r + 1}: load {start_load} -> {load()}", flush=True)

    def cell(values):
        return (f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"
                if values else "")

    stage_names = []
    for runs in results.values():
        for _, _, stages in runs:
            for name in stages:
                if name not in stage_names and name != "total":
                    stage_names.append(name)
    print("\n| model | mode | build | wall ms | CPU ms | " + " | ".join(stage_names) +
          " | stages total |")
    print("|---" * (6 + len(stage_names)) + "|")
    for (model, mode, side), runs in results.items():
        row = [model, mode, side, cell([w for w, _, _ in runs]), cell([c for _, c, _ in runs])]
        for name in stage_names + ["total"]:
            values = [s[name] for _, _, s in runs if name in s]
            row.append(f"{statistics.median(values):.1f}" if values else "")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
