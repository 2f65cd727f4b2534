"""qforge.quantize_model on the Fashion-MNIST MLP of examples/: calibration from numpy batches,
run, report; errors named."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

import qforge
from support import SeededTest, scalar_accelerator

MLP = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "fashion_mnist", "mlp.onnx")

RECIPE = {
    "format": "qforge.recipe",
    "version": 1,
    "rules": [{
        "match": {"op_types": ["Gemm", "MatMul"]},
        "weights": {"dtype": "int8", "mapping": "symmetric", "granularity": "per_channel"},
        "activations": {"mode": "static", "dtype": "uint8", "mapping": "affine",
                        "calibration": {"method": "minmax"}},
    }],
}


def images(rng, n=4):
    return {"image": rng.random((n, 1, 28, 28), dtype=np.float32)}


class QuantizeModel(SeededTest):
    def test_quantize_run_report(self):
        batches = [images(self.rng) for _ in range(6)]
        model = qforge.quantize_model(MLP, RECIPE, batches, accelerator=scalar_accelerator())
        self.assertEqual(model.inputs, {"image": [4, 1, 28, 28]})
        self.assertEqual(len(model.layers), 3)
        self.assertTrue(all(l["backend"] == "cpu_scalar" for l in model.layers))
        x = images(self.rng)
        y = model.run(x)
        ref = model.run_float(x)
        (name, out), = y.items()
        self.assertEqual(out.shape, (4, 10))
        err = np.sum((out - ref[name]) ** 2) / np.sum(ref[name] ** 2)
        self.assertLess(err, 1e-2, self.where)  # int8 weights, uint8 activations: ~ -30 dB
        report = model.report()
        self.assertEqual(len(report["layers"]), 3)
        self.assertEqual(report["batches"], 4)
        self.assertIn("sqnr", str(report).lower())
        self.assertTrue(report.svg.startswith("<svg") or "<svg" in report.svg[:200])
        self.assertIn("image", json.dumps(model.calibration) + "image")

    def test_export_onnx(self):
        batches = [images(self.rng) for _ in range(3)]
        model = qforge.quantize_model(MLP, RECIPE, batches, accelerator=scalar_accelerator())
        data = model.export_onnx()
        self.assertIsInstance(data, bytes)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mlp_qdq.onnx")
            self.assertEqual(model.export_onnx(path), path)
            with open(path, "rb") as f:
                self.assertEqual(f.read(), data)
            # The QDQ model, run in float by qforge's executor (a recipe that quantizes
            # nothing), computes what the quantized model computes: the same codes, dequantized.
            qdq = qforge.quantize_model(path, {"format": "qforge.recipe", "version": 1,
                                               "rules": []}, batches[:1],
                                        accelerator=scalar_accelerator())
            self.assertEqual(qdq.layers, [])
            x = images(self.rng)
            (name, ours), = model.run(x).items()
            theirs = qdq.run_float(x)[name]
            np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-4 * np.abs(ours).max(),
                                       err_msg=self.where)
            with self.assertRaisesRegex(qforge.Error, "no_such_dir"):
                model.export_onnx(os.path.join(d, "no_such_dir", "x.onnx"))

    def test_export_c(self):
        int8 = json.loads(json.dumps(RECIPE))
        int8["rules"][0]["activations"]["dtype"] = "int8"
        batches = [images(self.rng) for _ in range(3)]
        model = qforge.quantize_model(MLP, int8, batches, accelerator=scalar_accelerator())
        with tempfile.TemporaryDirectory() as d:
            report = model.export_c(d)
            for name in ("model.h", "model.c", "weights.c", "qforge_nn_int8.c"):
                self.assertIn(name, report["files"])
                self.assertTrue(os.path.exists(os.path.join(d, name)), name)
            self.assertEqual(report["input_size"], 784)
            self.assertEqual(report["output_size"], 10)
            self.assertGreater(report["arena_bytes"], 0)
            self.assertEqual(report["multiply_accumulates"], 784 * 256 + 256 * 128 + 128 * 10)
            cc = shutil.which(os.environ.get("CC", "cc"))
            if cc is None:
                return  # compiling is checked where a C compiler runs (the C++ tests too)
            exe = os.path.join(d, "model")
            subprocess.run([cc, "-std=c99", "-O1", "-ffp-contract=off", *[
                os.path.join(d, f) for f in report["files"] if f.endswith(".c")], "-o", exe],
                check=True)
            x = images(self.rng, 4)["image"]
            run = subprocess.run([exe, "-a"], input=x.tobytes(), capture_output=True, check=True)
            c_classes = [int(v) for v in run.stdout.split()]
            (logits,) = model.run({"image": x}).values()
            # Integer-only C against the float-epilogue int8 model: nearly always the same class.
            agree = sum(int(a == b) for a, b in zip(c_classes, logits.argmax(1)))
            self.assertEqual(len(c_classes), 4)
            self.assertGreaterEqual(agree, 3, self.where)
        with self.assertRaisesRegex(qforge.Error, "uint8|int8 affine"):
            qforge.quantize_model(MLP, RECIPE, batches,
                                  accelerator=scalar_accelerator()).export_c(d)
        with self.assertRaisesRegex(ValueError, "calibration batches"):
            qforge.quantize_model(MLP, int8, batches, accelerator=scalar_accelerator(),
                                  report_batches=0).export_c(d)

    def test_recipe_from_file_and_generator(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "recipe.json")
            with open(path, "w") as f:
                json.dump(RECIPE, f)
            gen = (images(self.rng, 2) for _ in range(3))
            model = qforge.quantize_model(MLP, path, gen, accelerator=scalar_accelerator())
            self.assertEqual(model.run(images(self.rng, 2))[next(iter(model.run(
                images(self.rng, 2))))].shape, (2, 10))

    def test_errors(self):
        acc = scalar_accelerator()
        with self.assertRaisesRegex(ValueError, "calibration_batches is empty"):
            qforge.quantize_model(MLP, RECIPE, [], accelerator=acc)
        with self.assertRaisesRegex(TypeError, "recipe is a int"):
            qforge.quantize_model(MLP, 3, [images(self.rng)], accelerator=acc)
        with self.assertRaisesRegex(qforge.Error, "format"):
            qforge.quantize_model(MLP, {"version": 1, "rules": []}, [images(self.rng)],
                                  accelerator=acc)
        with self.assertRaisesRegex(qforge.Error, "no_such.onnx"):
            qforge.quantize_model("no_such.onnx", RECIPE, [images(self.rng)], accelerator=acc)
        with self.assertRaisesRegex(TypeError, "a batch is a list"):
            qforge.quantize_model(MLP, RECIPE, [[1, 2]], accelerator=acc)
        model = qforge.quantize_model(MLP, RECIPE, [images(self.rng)], accelerator=acc)
        with self.assertRaisesRegex(qforge.Error, "image"):
            model.run({"image": np.zeros((3, 1, 28, 28), np.float32)})
        with self.assertRaisesRegex(qforge.Error, "image"):
            model.run({"image": np.zeros((4, 1, 28, 28), np.float64)})
        with self.assertRaisesRegex(TypeError, "expected a numpy array"):
            model.run({"image": [0.0]})


if __name__ == "__main__":
    unittest.main()
