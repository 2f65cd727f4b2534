#!/usr/bin/env python3
"""The ONNX Runtime check (docs/MODEL.md): qforge's float executor and its QDQ export against
ONNX Runtime on fresh random models and inputs.

    ort_check.py QFORGE_ORT_CASES     (QFORGE_TEST_SEED=N replays a run)

QFORGE_ORT_CASES writes the cases and qforge's outputs (ort_cases.cpp); this script runs the
same models in ONNX Runtime (CPU provider, one thread) and compares:

  float models  |qforge - ort| <= 1e-4 * |ort| + 1e-5 * max|ort| per element: relative 1e-4,
                with a floor for elements that are sums cancelling to near zero, whose float32
                rounding follows the size of their terms, not of the result.
  QDQ models    per quantized layer, A's codes within one of qforge's and at most 1% of them
                different; the layer's output within the bound of qdq_bound.h (one output
                quantization step sa*sb[n], plus what moved codes or a moved dynamic scale
                account for exactly, plus float rounding of 2^-20 of the sum of |terms|); the
                graph outputs of the unmodified model within the same bound, and the same
                argmax in every row whose top two logits are further apart than the bound,
                with ORT's reference evaluation (basic optimizations), and with its optimized
                one where its integer kernels are exact (uint8 weights); the others are
                reported, not checked (see check_qdq).
"""
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

FLOAT_RTOL = 1e-4
FLOAT_ATOL_OF_MAX = 1e-5
ROUNDING = 2.0**-20
MAX_FLIPPED_FRACTION = 0.01


def load(path):
    return numpy_helper.to_array(onnx.load_tensor(str(path)))


def session(model, level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = level
    opts.intra_op_num_threads = 1  # the tests share two cores with the rest of ctest
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


BASIC = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC


def run(sess, inputs):
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, inputs)))


class Report:
    def __init__(self):
        self.failures = []

    def check(self, ok, what):
        if not ok:
            self.failures.append(what)
        return ok


def check_float(case, d, report):
    sess = session(str(d / case["model"]))
    inputs = {n: load(d / f) for n, f in case["inputs"].items()}
    ort_out = run(sess, inputs)
    for name, f in case["outputs"].items():
        mine, ref = load(d / f), ort_out[name]
        if not report.check(mine.shape == ref.shape,
                            f"{case['name']}: output {name}: shape {mine.shape} vs ORT {ref.shape}"):
            continue
        err = np.abs(mine.astype(np.float64) - ref)
        allowed = FLOAT_RTOL * np.abs(ref) + FLOAT_ATOL_OF_MAX * np.max(np.abs(ref))
        worst = np.unravel_index(np.argmax(err / allowed), err.shape)
        rel = float(np.max(err / np.maximum(np.abs(ref), 1e-30)))
        print(f"float {case['name']}.{name}: max |diff| {err.max():.3g}, "
              f"max relative {rel:.3g}, worst/allowed {float((err / allowed)[worst]):.3g}")
        report.check(np.all(err <= allowed),
                     f"{case['name']}: output {name}{list(worst)}: qforge {mine[worst]!r} vs ORT "
                     f"{ref[worst]!r} (allowed {allowed[worst]:.3g})")


def with_outputs(model, outputs):
    """The model with extra graph outputs (name -> ONNX element type)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for name, elem in outputs.items():
        m.graph.output.append(helper.make_tensor_value_info(name, elem, None))
    return m.SerializeToString()


def layer_bound(layer, inits, a_q, a_x, sa_q, za_q, sa_x, za_x):
    """qdq_bound.h's bound on |y_ort - y_qforge| for one layer, [M, N]."""
    w = inits[layer["weight"]].astype(np.int64)
    if layer["weight_layout"] == "nk":
        w = w.T
    sb = inits[layer["weight_scale"]].astype(np.float64)
    wt = np.abs(w - inits[layer["weight_zero_point"]].astype(np.int64))  # [K, N]
    moved = np.abs((a_x - za_x) - (a_q - za_q)).astype(np.float64) @ wt
    terms = np.abs(a_q - za_q).astype(np.float64) @ wt
    step = float(sa_x) * sb
    bias = np.abs(np.asarray(layer["bias"], dtype=np.float64)) if layer["bias"] else 0.0
    return (step * (1.0 + moved) + abs(float(sa_x) - float(sa_q)) * sb * terms
            + ROUNDING * (step * terms + bias))


def check_qdq(case, d, report):
    name = case["name"]
    model = onnx.load(str(d / case["model"]))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    inputs = {n: load(d / f) for n, f in case["inputs"].items()}
    extra = {}
    for layer in case["layers"]:
        if layer["dynamic"]:
            code_type = onnx.TensorProto.UINT8
            extra[layer["scale_tensor"]] = onnx.TensorProto.FLOAT
            extra[layer["zero_point_tensor"]] = onnx.TensorProto.UINT8
        else:
            code_type = helper.np_dtype_to_tensor_dtype(inits[layer["zero_point_tensor"]].dtype)
        extra[layer["codes_tensor"]] = code_type
        extra[layer["output_tensor"]] = onnx.TensorProto.FLOAT
    extra = {k: v for k, v in extra.items() if k not in [o.name for o in model.graph.output]}
    seen = run(session(with_outputs(model, extra), BASIC), inputs)
    bounds = {}
    for layer in case["layers"]:
        k, n, lname = layer["k"], layer["n"], f"{name}.{layer['name']}"
        a_q = load(d / layer["qforge_codes"]).astype(np.int64).reshape(-1, k)
        a_x = seen[layer["codes_tensor"]].astype(np.int64).reshape(-1, k)
        sa_q, za_q = layer["qforge_scale"], layer["qforge_zero_point"]
        if layer["dynamic"]:
            sa_x = float(seen[layer["scale_tensor"]])
            za_x = int(seen[layer["zero_point_tensor"]])
        else:
            sa_x = float(inits[layer["scale_tensor"]])
            za_x = int(inits[layer["zero_point_tensor"]])
            report.check(abs(sa_x - sa_q) == 0 and za_x == za_q,
                         f"{lname}: exported A params {sa_x}, {za_x}; qforge's {sa_q}, {za_q}")
        flipped = int(np.count_nonzero(a_q != a_x))
        max_diff = int(np.max(np.abs(a_q - a_x))) if flipped else 0
        bound = layer_bound(layer, inits, a_q, a_x, sa_q, za_q, sa_x, za_x)
        y_q = load(d / layer["qforge_output"]).astype(np.float64).reshape(-1, n)
        y_x = seen[layer["output_tensor"]].astype(np.float64).reshape(-1, n)
        if layer.get("int8_output"):
            # The int8 path: qforge's output is the next layer's codes (its int32 bias rounded to
            # sa * sb[n], requantized, saturated); ORT's the float before that layer's
            # QuantizeLinear. Within the codes' range they differ by at most one step.
            o = layer["int8_output"]
            step = float(np.float32(o["scale"]))
            lo, hi = ((o["qmin"] - o["zero_point"]) * step, (o["qmax"] - o["zero_point"]) * step)
            y_x = np.clip(y_x, lo, hi)
            bound = np.full(y_q.shape, 1.01 * step)
        ratio = np.abs(y_x - y_q) / bound
        worst = np.unravel_index(np.argmax(ratio), ratio.shape)
        print(f"qdq {lname}: {flipped} of {a_q.size} A codes differ (max {max_diff}), "
              f"scale {sa_q:.6g} vs {sa_x:.6g}, worst |diff|/bound {ratio[worst]:.3g}")
        report.check(max_diff <= 1, f"{lname}: A codes differ by {max_diff}")
        report.check(flipped <= MAX_FLIPPED_FRACTION * a_q.size,
                     f"{lname}: {flipped} of {a_q.size} A codes differ")
        report.check(ratio[worst] <= 1.0,
                     f"{lname}: output{list(worst)}: qforge {y_q[worst]!r} vs ORT {y_x[worst]!r}, "
                     f"bound {bound[worst]:.3g}")
        bounds[layer["name"]] = bound
    # The unmodified model as ORT's reference evaluation (each op by its ONNX definition, constant
    # folding only) and as a user runs it (ORT's QDQ fusions into integer kernels).
    reference = run(session(str(d / case["model"]), BASIC), inputs)
    optimized = run(session(str(d / case["model"])), inputs)
    # ORT's integer kernels are exact for uint8 weights (u8u8 QGemm). For int8 weights they are
    # not on CPUs without VNNI (MLAS's AVX2 u8s8 path adds pairs of products in int16, which
    # saturates; ORT's docs advise 7-bit weights there), and dynamic layers become its
    # MatMulNBits: those runs are reported, their accuracy is ORT's, not the export's.
    exact_kernels = all(inits[layer["weight"]].dtype == np.uint8 and not layer["dynamic"]
                        for layer in case["layers"])
    for out, f in case["outputs"].items():
        y_q = load(d / f).astype(np.float64)
        bound = bounds[case["output_layers"][out]].reshape(y_q.shape) + ROUNDING * np.abs(y_q)
        check_output(f"{name}.{out} (ORT basic)", y_q, reference[out].astype(np.float64), bound,
                     report)
        y_o = optimized[out].astype(np.float64)
        if exact_kernels:
            check_output(f"{name}.{out} (ORT all)", y_q, y_o, bound, report)
        else:
            rows_q, rows_o = y_q.reshape(-1, y_q.shape[-1]), y_o.reshape(-1, y_o.shape[-1])
            agree = np.count_nonzero(rows_q.argmax(axis=1) == rows_o.argmax(axis=1))
            print(f"qdq {name}.{out} (ORT all, not checked: int8 or dynamic layers): differs "
                  f"from ORT's reference by up to {np.max(np.abs(y_o - reference[out])):.3g}, "
                  f"argmax agrees with qforge in {agree} of {len(rows_q)} rows")


def check_output(what, y_q, y_x, bound, report):
    """y_x within `bound` of qforge's y_q, and the same argmax in every row except near-ties:
    rows where qforge's logits of the two winners are within their bounds of each other."""
    ok = np.abs(y_x - y_q) <= bound
    report.check(np.all(ok), f"{what}: {np.count_nonzero(~ok)} values outside the bound "
                 f"(worst |diff| {np.max(np.abs(y_x - y_q)):.3g})")
    rows_q, rows_x = y_q.reshape(-1, y_q.shape[-1]), y_x.reshape(-1, y_x.shape[-1])
    rows_b = np.broadcast_to(bound, y_q.shape).reshape(rows_q.shape)
    top_q, top_x = rows_q.argmax(axis=1), rows_x.argmax(axis=1)
    r = np.arange(len(rows_q))
    tie = rows_q[r, top_q] - rows_q[r, top_x] <= rows_b[r, top_q] + rows_b[r, top_x]
    differ = (top_q != top_x) & ~tie
    print(f"qdq {what}: argmax agrees in {np.count_nonzero(top_q == top_x)} of {len(r)} rows, "
          f"max |diff| {np.max(np.abs(y_x - y_q)):.3g}")
    report.check(not differ.any(),
                 f"{what}: argmax differs in rows {np.nonzero(differ)[0].tolist()}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    seed = int(os.environ.get("QFORGE_TEST_SEED", random.randrange(2**63)))
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}; "
          f"seed {seed}")
    work = pathlib.Path(tempfile.mkdtemp(prefix="qforge_ort_"))
    subprocess.run([sys.argv[1], "--seed", str(seed), "--out", str(work)], check=True)
    manifest = json.loads((work / "manifest.json").read_text())
    report = Report()
    for case in manifest["float"]:
        check_float(case, work, report)
    for case in manifest["qdq"]:
        check_qdq(case, work, report)
    if report.failures:
        for f in report.failures:
            print("FAILED:", f)
        print(f"seed {seed} (replay with QFORGE_TEST_SEED={seed}); cases kept in {work}")
        sys.exit(1)
    for p in work.iterdir():
        p.unlink()
    work.rmdir()
    print("all cases match ONNX Runtime")


if __name__ == "__main__":
    main()
