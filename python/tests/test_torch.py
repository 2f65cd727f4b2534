"""qforge.torch: nn.Linear swapped for qforge's quantized matmul. Runs where PyTorch is
installed (the GPU host); elsewhere the torch tests skip with the reason, and the import error
is checked."""

import importlib.util
import unittest

import numpy as np

import qforge
from support import SeededTest, scalar_accelerator

HAVE_TORCH = importlib.util.find_spec("torch") is not None
NO_TORCH = "PyTorch is not installed here (qforge.torch runs where it is, e.g. the GPU host)"

DYNAMIC = {"format": "qforge.recipe", "version": 1, "rules": [{
    "match": {"op_types": ["Linear"]},
    "weights": {"dtype": "int8", "mapping": "symmetric", "granularity": "per_channel"},
    "activations": {"mode": "dynamic", "dtype": "uint8", "mapping": "affine"}}]}
STATIC = {"format": "qforge.recipe", "version": 1, "rules": [
    {"label": "head stays float", "match": {"name_regex": "^2$"}, "skip": True},
    {"match": {"op_types": ["Linear"]},
     "weights": {"dtype": "int8", "mapping": "symmetric", "granularity": "per_channel"},
     "activations": {"mode": "static", "dtype": "uint8", "mapping": "affine",
                     "calibration": {"method": "minmax"}}}]}


@unittest.skipIf(HAVE_TORCH, "PyTorch is installed: the import succeeds")
class WithoutTorch(unittest.TestCase):
    def test_import_names_the_missing_dependency(self):
        with self.assertRaisesRegex(ImportError, "qforge.torch needs PyTorch"):
            import qforge.torch  # noqa: F401


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class QuantizeLinear(SeededTest):
    def mlp(self):
        import torch
        torch.manual_seed(self.seed)
        return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                   torch.nn.Linear(64, 10))

    def sqnr(self, ref, out):
        ref, out = ref.detach().numpy(), out.detach().numpy()
        return 10 * np.log10(np.sum(ref ** 2) / max(np.sum((ref - out) ** 2), 1e-30))

    def test_dynamic(self):
        import torch
        import qforge.torch as qt
        model = self.mlp().eval()
        x = torch.randn(8, 32)
        ref = model(x)
        qt.quantize_(model, DYNAMIC, accelerator=scalar_accelerator())
        self.assertIsInstance(model[0], qt.QuantizedLinear)
        self.assertIsInstance(model[2], qt.QuantizedLinear)
        self.assertFalse(model[0].training, "quantize_ keeps the model's eval mode")
        out = model(x)
        self.assertFalse(torch.equal(out, ref), "the quantized path ran, not float")
        self.assertGreater(self.sqnr(ref, out), 30, self.where)
        model.train()  # float training mode
        self.assertTrue(torch.equal(model(x), ref))

    def test_dynamic_plan_matches_the_per_call_matmul(self):
        import torch
        import qforge.torch as qt
        acc = scalar_accelerator()
        model = self.mlp().eval()
        qt.quantize_(model, DYNAMIC, accelerator=acc)
        layer = model[0]
        x = torch.randn(5, 32) * 3 + 1  # a zero point away from the middle
        xn = x.numpy()
        params = qforge.QuantizationParams.from_range(qforge.uint8, qforge.Mapping.affine,
                                                      float(xn.min()), float(xn.max()))
        expected = acc.matmul_dequant(acc.quantize(xn, params), [5, 32], params,
                                      layer.weight_codes, [64, 32], layer.weight_params, "nk",
                                      layer.bias_values)
        got = layer(x).detach().numpy()
        run = layer._plans[("dynamic", 5)]
        self.assertIsInstance(run.chain, qforge._qforge._DynamicChain, "one chained call")
        self.assertTrue(run.plans[1].a_params_at_run, "the plan takes A's params at run")
        scale, zero_point = run.chain.last_params
        self.assertEqual((np.float32(scale), zero_point),
                         (np.float32(params.scales[0]), params.zero_points[0]), self.where)
        np.testing.assert_array_equal(got, expected, err_msg=self.where)

    def dynamic_reference(self, layer, x, dtype, mapping):
        """Core's reference for a dynamic layer on x [M, K]: params from the batch's range,
        codes, matmul_dequant with the layer's weight codes and bias."""
        xn = x.reshape(-1, layer.in_features).numpy()
        p = qforge.QuantizationParams.from_range(dtype, mapping, float(xn.min()),
                                                 float(xn.max()))
        a = qforge.reference.quantize(xn, p)
        return qforge.reference.matmul_dequant(
            a, list(xn.shape), p, layer.weight_codes, [layer.out_features, layer.in_features],
            layer.weight_params, "nk", layer.bias_values)

    def test_dynamic_layers_equal_the_reference_bit_for_bit(self):
        # uint8 affine: one _DynamicChain call; int8 affine and symmetric: the range in numpy,
        # then the plan with A's params at run. Fresh params on every call, one plan per size.
        import torch
        import qforge.torch as qt
        for dtype, mapping in ((qforge.uint8, qforge.affine), (qforge.int8, qforge.affine),
                               (qforge.int8, qforge.symmetric)):
            rule = dict(DYNAMIC["rules"][0], activations={
                "mode": "dynamic", "dtype": dtype.name, "mapping": mapping.name})
            model = self.mlp().eval()
            qt.quantize_(model, dict(DYNAMIC, rules=[rule]), accelerator=scalar_accelerator())
            layer = model[0]
            for shape in ((1, 32), (7, 32), (7, 32), (2, 3, 32)):
                x = torch.randn(*shape) * float(self.rng.uniform(0.1, 6)) + \
                    float(self.rng.uniform(-3, 3))
                with torch.no_grad():
                    got = layer(x)
                want = self.dynamic_reference(layer, x, dtype, mapping)
                self.assertEqual(tuple(got.shape), shape[:-1] + (64,))
                np.testing.assert_array_equal(got.reshape(-1, 64).numpy(), want,
                                              err_msg=f"{dtype.name} {mapping.name} {shape}; "
                                                      f"{self.where}")
            self.assertEqual(sorted(k[1] for k in layer._plans), [1, 6, 7])

    def test_dynamic_on_the_host_plugins(self):
        # Whichever host plugin wins (cpu_x86 where it loads): within matmul_dequant's float
        # tolerance. (An accelerator whose cuda plugin may win makes device plans, which CPU
        # tensors refuse with a ValueError.)
        import torch
        import qforge.torch as qt
        host = [p for p in ("cpu_x86", "cpu_scalar") if p in qforge.Accelerator().plugins]
        model = self.mlp().eval()
        qt.quantize_(model, DYNAMIC, accelerator=qforge.Accelerator(plugins=host))
        x = torch.randn(33, 32) * 2 - 0.5
        with torch.no_grad():
            got = model[0](x).numpy()
        want = self.dynamic_reference(model[0], x, qforge.uint8, qforge.affine)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max(),
                                   err_msg=f"{model[0]._plans}; {self.where}")

    def test_static_with_calibration_and_skip_rule(self):
        import torch
        import qforge.torch as qt
        model = self.mlp().eval()
        batches = [torch.randn(8, 32) for _ in range(8)]
        ref = model(batches[0])
        report = qt.quantize_(model, STATIC, calibration_loader=batches,
                              accelerator=scalar_accelerator())
        self.assertIn("head stays float", report)
        self.assertIsInstance(model[0], qt.QuantizedLinear)
        self.assertIsInstance(model[2], torch.nn.Linear)
        self.assertIsNotNone(model[0].activation_params)
        out = model(batches[0])
        self.assertFalse(torch.equal(out, ref), "the quantized path ran, not float")
        self.assertGreater(self.sqnr(ref, out), 30, self.where)

    def test_calibration_batches_as_keyword_dicts(self):
        import torch
        import qforge.torch as qt

        class TwoInputs(torch.nn.Module):  # called as model(x=..., shift=...), like a tokenizer's
            def __init__(self, mlp):
                super().__init__()
                self.mlp = mlp

            def forward(self, x, shift):
                return self.mlp(x + shift)

        model = TwoInputs(self.mlp()).eval()
        batches = [{"x": torch.randn(8, 32), "shift": torch.full((1, 32), 4.0)} for _ in range(4)]
        recipe = dict(STATIC, rules=[dict(STATIC["rules"][0], match={"name_regex": r"^mlp\.2$"}),
                                     STATIC["rules"][1]])
        qt.quantize_(model, recipe, calibration_loader=batches, accelerator=scalar_accelerator())
        params = model.mlp[0].activation_params
        # Every calibration input lies around 4 (shift); a calibration that ignored `shift`
        # would centre the range on 0.
        lo = -params.zero_points[0] * params.scales[0]
        self.assertGreater(lo + 255 * params.scales[0], 6.0, self.where)
        self.assertGreater(lo, -1.0, self.where)

    def test_quantize_weights_after_training(self):
        import torch
        import qforge.torch as qt
        model = self.mlp().eval()
        qt.quantize_(model, DYNAMIC, accelerator=scalar_accelerator())
        codes, scales = model[0].weight_codes.copy(), model[0].weight_params.scales
        with torch.no_grad():
            model[0].weight.mul_(2)  # exact in float32: same codes at twice the scales
        model[0].quantize_weights()
        np.testing.assert_array_equal(model[0].weight_codes, codes)
        np.testing.assert_array_equal(model[0].weight_params.scales, 2 * scales)

    def test_errors(self):
        import torch
        import qforge.torch as qt
        with self.assertRaisesRegex(ValueError, "calibration_loader"):
            qt.quantize_(self.mlp(), STATIC)
        bad = dict(DYNAMIC, rules=[dict(DYNAMIC["rules"][0], match={"name_regex": "nothing"})])
        with self.assertRaisesRegex(qforge.Error, "nothing"):
            qt.quantize_(self.mlp(), bad)
        if torch.cuda.is_available() and "cuda" in qforge.Accelerator().plugins:
            model = self.mlp().eval()
            rule = dict(DYNAMIC["rules"][0], activations={
                "mode": "dynamic", "dtype": "int8", "mapping": "symmetric"})
            qt.quantize_(model, dict(DYNAMIC, rules=[rule]))
            with self.assertRaisesRegex(ValueError, "dynamic int8 symmetric activations on CUDA "
                                                    "tensors; the cuda plugin computes"):
                model.to("cuda")(torch.randn(2, 32, device="cuda"))


CONV_STATIC = {"format": "qforge.recipe", "version": 1, "rules": [{
    "match": {"op_types": ["Conv2d", "Linear"]},
    "weights": {"dtype": "int8", "mapping": "symmetric", "granularity": "per_channel"},
    "activations": {"mode": "static", "dtype": "uint8", "mapping": "affine",
                    "calibration": {"method": "minmax"}}}]}


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class QuantizeConv2d(SeededTest):
    def cnn(self):
        import torch
        from torch import nn
        torch.manual_seed(self.seed)
        return nn.Sequential(
            nn.Conv2d(2, 6, 3, padding="same"), nn.ReLU(),
            nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=3), nn.ReLU(),
            nn.Conv2d(6, 4, (1, 3), dilation=(1, 2)), nn.Flatten(), nn.Linear(24, 5))

    def test_static_conv_layers_match_the_dequantized_float_convolution(self):
        import torch
        import qforge.torch as qt
        model = self.cnn()
        batches = [torch.randn(3, 2, 11, 9) for _ in range(4)]
        model.eval()
        with torch.no_grad():
            ref = model(batches[0])
        qt.quantize_(model, CONV_STATIC, calibration_loader=batches,
                     accelerator=scalar_accelerator())
        for i in (0, 2, 4):
            self.assertIsInstance(model[i], qt.QuantizedConv2d)
        self.assertIsInstance(model[6], qt.QuantizedLinear)
        with torch.no_grad():
            out = model(batches[0])
        self.assertFalse(torch.equal(out, ref), "the quantized path ran, not float")
        self.assertGreater(self.sqnr(ref, out), 20, self.where)
        # Each convolution: the float convolution of the dequantized codes, up to rounding.
        x = batches[1]
        for i in (0, 2, 4):
            layer = model[i]
            with torch.no_grad():
                got = layer(x)
            p = layer.activation_params
            xq = qforge.reference.quantize(x.numpy(), p)
            xd = torch.from_numpy(qforge.reference.dequantize(xq, list(x.shape), p))
            wd = torch.from_numpy(qforge.reference.dequantize(
                layer.weight_codes, list(layer.weight.shape), layer.weight_params))
            expected = torch.nn.functional.conv2d(xd, wd, layer.bias, layer.stride,
                                                  layer.padding, layer.dilation, layer.groups)
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4,
                                       msg=lambda m: f"layer {i}: {m}; {self.where}")
            with torch.no_grad():
                x = model[i + 1](got)  # the ReLU (or Flatten) after it

    def sqnr(self, ref, out):
        ref, out = ref.detach().numpy(), out.detach().numpy()
        return 10 * np.log10(np.sum(ref ** 2) / max(np.sum((ref - out) ** 2), 1e-30))

    def test_dynamic_conv_is_refused_unless_the_rule_is_optional(self):
        import qforge.torch as qt
        rule = dict(DYNAMIC["rules"][0], match={"op_types": ["Conv2d", "Linear"]})
        with self.assertRaisesRegex(ValueError, "dynamic activations are not supported for "
                                                "Conv2d"):
            qt.quantize_(self.cnn().eval(), dict(DYNAMIC, rules=[rule]),
                         accelerator=scalar_accelerator())
        model = self.cnn().eval()
        report = qt.quantize_(model, dict(DYNAMIC, rules=[dict(rule, optional=True)]),
                              accelerator=scalar_accelerator())
        self.assertIn("left in float", report)
        self.assertNotIsInstance(model[0], qt.QuantizedConv2d)


def cuda_reason():
    """Why the CUDA tests cannot run here, or None when they can."""
    if not HAVE_TORCH:
        return NO_TORCH
    import torch
    if not torch.cuda.is_available():
        return "no CUDA device visible to PyTorch here"
    if "cuda" not in qforge.Accelerator(online_tuning=False, use_cache=False).plugins:
        return "qforge's cuda plugin is not loaded here"
    return None


CUDA_REASON = cuda_reason()


@unittest.skipIf(CUDA_REASON, CUDA_REASON or "")
class OnCuda(SeededTest):
    """CUDA tensors through the cuda plugin, in place: the same results as the CPU path (the
    plans' float epilogues may differ in the last bits), on the default and on a side stream."""

    def setUp(self):
        super().setUp()
        import torch
        torch.manual_seed(self.seed)

    def cuda_accelerator(self):
        return qforge.Accelerator(plugins=["cuda"], online_tuning=False, use_cache=False)

    def check_linear_model(self, recipe_rule_dtype):
        import torch
        import qforge.torch as qt
        model = torch.nn.Sequential(torch.nn.Linear(96, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 40)).eval()
        rule = dict(STATIC["rules"][1])
        rule["activations"] = dict(rule["activations"], dtype=recipe_rule_dtype)
        recipe = dict(STATIC, rules=[rule])
        batches = [torch.randn(16, 96) for _ in range(3)]
        qt.quantize_(model, recipe, calibration_loader=batches, accelerator=scalar_accelerator())
        x = torch.randn(16, 96)
        with torch.no_grad():
            expected = model(x)
            gpu_model = model.to("cuda")
            for layer in (gpu_model[0], gpu_model[2]):
                layer._accelerator = self.cuda_accelerator()
                layer._plans = {}
            got = gpu_model(x.to("cuda"))
        self.assertEqual(got.device.type, "cuda")
        for layer in (gpu_model[0], gpu_model[2]):
            plans = [p for p in layer._plans.values()]
            self.assertTrue(plans and all(p.backend == "cuda" for pair in plans for p in pair),
                            "the cuda plugin ran the layer")
        self.assertFalse(any(p.host_memory or p.staged for pair in plans for p in pair),
                         "the layer's plans take device memory (residency='device')")
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-5,
                                   msg=lambda m: f"{m}; {self.where}")
        # The same on a side stream, the input made on that stream just before.
        side = torch.cuda.Stream()
        with torch.no_grad(), torch.cuda.stream(side):
            xs = x.to("cuda", non_blocking=True) * 1.0
            got_side = gpu_model(xs)
            got_side_host = got_side.cpu()
        torch.testing.assert_close(got_side_host, expected, rtol=1e-5, atol=1e-5,
                                   msg=lambda m: f"side stream: {m}; {self.where}")

    def test_dynamic_linear_layers(self):
        # Dynamic uint8 activations on CUDA: each batch's range, codes, scale and zero point on
        # the device (dynamic_quantize_linear), then the matmul plan with those params at run.
        import torch
        import qforge.torch as qt
        model = torch.nn.Sequential(torch.nn.Linear(96, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 40)).eval()
        qt.quantize_(model, DYNAMIC, accelerator=scalar_accelerator())
        xs = [torch.randn(16, 96) * 2 + 0.7, torch.randn(16, 96) * 0.3 - 2, torch.randn(1, 96)]
        with torch.no_grad():
            expected = [model(x) for x in xs]  # the CPU path: core's reference bit for bit
            gpu_model = model.to("cuda")
            for layer in (gpu_model[0], gpu_model[2]):
                layer._accelerator = self.cuda_accelerator()
                layer._plans = {}
            got = [gpu_model(x.to("cuda")) for x in xs]
        for layer in (gpu_model[0], gpu_model[2]):
            runs = list(layer._plans.values())
            self.assertTrue(runs and all(isinstance(r.chain, qforge._qforge._DynamicChain)
                                         and r.plans[0].backend == r.plans[1].backend == "cuda"
                                         for r in runs), "the cuda plugin ran the layer")
        for i, (g, e) in enumerate(zip(got, expected)):
            self.assertEqual(g.device.type, "cuda")
            torch.testing.assert_close(g.cpu(), e, rtol=1e-5, atol=1e-5,
                                       msg=lambda m: f"batch {i}: {m}; {self.where}")
        # The first layer's codes and params of the last batch: exactly the reference's.
        run = gpu_model[0]._plans[("cuda", 0, 1)]
        xn = xs[2].numpy()
        p = qforge.QuantizationParams.from_range(qforge.uint8, qforge.affine, float(xn.min()),
                                                 float(xn.max()))
        scale, zero_point = run.chain.last_params
        self.assertEqual((np.float32(scale), zero_point),
                         (np.float32(p.scales[0]), p.zero_points[0]), self.where)
        np.testing.assert_array_equal(run.between.cpu().numpy(),
                                      qforge.reference.quantize(xn, p), err_msg=self.where)
        # On a side stream, the input made there just before.
        side = torch.cuda.Stream()
        with torch.no_grad(), torch.cuda.stream(side):
            x_side = xs[0].to("cuda", non_blocking=True) * 1.0
            got_side = gpu_model(x_side).cpu()
        torch.testing.assert_close(got_side, expected[0], rtol=1e-5, atol=1e-5,
                                   msg=lambda m: f"side stream: {m}; {self.where}")

    def test_dynamic_layer_equals_the_two_plans_run_dlpack_bit_for_bit(self):
        # The chained call against dynamic_quantize_linear and the flagged matmul_dequant run
        # one after the other through Plan.run_dlpack: scale and zero point come back to host
        # arrays, then go in as a_params= and as the two host arrays.
        import torch
        import qforge.torch as qt
        model = torch.nn.Sequential(torch.nn.Linear(96, 128)).eval()
        qt.quantize_(model, DYNAMIC, accelerator=scalar_accelerator())
        layer = model.to("cuda")[0]
        layer._accelerator = acc = self.cuda_accelerator()
        layer._plans = {}
        for m in (1, 16, 300):
            x = torch.randn(m, 96, device="cuda") * 1.5 + 0.25
            with torch.no_grad():
                got = layer(x)
            dq = acc.prepare_dynamic_quantize([m, 96], residency="device")
            mm = acc.prepare_matmul(m, 128, 96, qforge.QuantizationParams.per_tensor_affine(
                qforge.uint8, 1.0, 0), layer.weight_params, b_layout="nk", b=layer.weight_codes,
                bias=layer.bias_values, a_params_at_run=True, residency="device")
            a = torch.empty(m, 96, dtype=torch.uint8, device="cuda")
            scale, zero_point = np.zeros(1, np.float32), np.zeros(1, np.uint8)
            dq.run_dlpack([x], [a, scale, zero_point])
            p = qforge.QuantizationParams.per_tensor_affine(qforge.uint8, float(scale[0]),
                                                            int(zero_point[0]))
            want = torch.empty(m, 128, device="cuda")
            mm.run_dlpack([a], [want], a_params=p)
            want_arrays = torch.empty(m, 128, device="cuda")
            mm.run_dlpack([a, scale, zero_point.astype(np.int32)], [want_arrays])
            torch.cuda.synchronize()
            self.assertTrue(torch.equal(got, want), f"m = {m}; {self.where}")
            self.assertTrue(torch.equal(want_arrays, want), f"m = {m}; {self.where}")
            with self.assertRaisesRegex(ValueError,
                                        r"a_scale \(a host value on every device\) is on cuda:0"):
                mm.run_dlpack([a, torch.from_numpy(scale).cuda(),
                               zero_point.astype(np.int32)], [want])

    def test_cuda_tensors_leave_a_cpu_accelerator_alone(self):
        # quantize_ was given a CPU accelerator (its policy: cpu_scalar only; every plugin is
        # still loaded in it). CUDA tensors must go to the cuda plugin, not to that policy.
        import torch
        import qforge.torch as qt
        model = torch.nn.Sequential(torch.nn.Linear(96, 128)).eval()
        qt.quantize_(model, dict(STATIC, rules=[STATIC["rules"][1]]),
                     calibration_loader=[torch.randn(16, 96)], accelerator=scalar_accelerator())
        x = torch.randn(1376, 96)
        with torch.no_grad():
            expected = model(x)
            got = model.to("cuda")(x.to("cuda"))
        cuda_plans = [p for key, pair in model[0]._plans.items()
                      if isinstance(key, tuple) and key[0] == "cuda" for p in pair]
        self.assertTrue(cuda_plans and all(p.backend == "cuda" for p in cuda_plans),
                        "the cuda plugin ran the layer")
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-5,
                                   msg=lambda m: f"{m}; {self.where}")

    def test_static_linear_layers_uint8(self):
        self.check_linear_model("uint8")

    def test_static_linear_layers_int8(self):
        self.check_linear_model("int8")

    def test_conv2d_on_cuda_where_the_plugin_has_convolution(self):
        import torch
        import qforge.torch as qt
        conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1)).eval()
        batches = [torch.randn(2, 3, 10, 12) for _ in range(2)]
        qt.quantize_(conv, CONV_STATIC, calibration_loader=batches,
                     accelerator=scalar_accelerator())
        x = torch.randn(2, 3, 10, 12)
        with torch.no_grad():
            expected = conv(x)
            conv = conv.to("cuda")
            conv[0]._accelerator = self.cuda_accelerator()
            conv[0]._plans = {}
            try:
                got = conv(x.to("cuda"))
            except qforge.Error as e:
                if "conv" in str(e):
                    self.skipTest(f"the cuda plugin has no convolution here: {e}")
                raise
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-5,
                                   msg=lambda m: f"{m}; {self.where}")

    def test_layers_equal_the_two_plans_run_dlpack_bit_for_bit(self):
        # The layer's one chained call (uint8 activations run as int8 codes less 128) against
        # the quantize and matmul_dequant plans of the recipe's own uint8 params through
        # Plan.run_dlpack, as the layer ran before: the same float32 output, bit for bit.
        import torch
        import qforge.torch as qt
        for m in (1, 16, 300):
            model = torch.nn.Sequential(torch.nn.Linear(96, 128)).eval()
            qt.quantize_(model, dict(STATIC, rules=[STATIC["rules"][1]]),
                         calibration_loader=[torch.randn(16, 96)],
                         accelerator=scalar_accelerator())
            layer = model.to("cuda")[0]
            layer._accelerator = self.cuda_accelerator()
            layer._plans = {}
            x = torch.randn(m, 96, device="cuda") * 1.5
            with torch.no_grad():
                got = model(x)
                got_again = model(x)  # the prepared run, reused
            acc, params = layer._accelerator, layer.activation_params
            self.assertEqual(params.dtype, qforge.DType.uint8)
            q = acc.prepare_quantize([m, 96], params, residency="device")
            mm = acc.prepare_matmul(m, 128, 96, params, layer.weight_params, b_layout="nk",
                                    b=layer.weight_codes, bias=layer.bias_values,
                                    residency="device")
            a = torch.empty(m, 96, dtype=torch.uint8, device="cuda")
            want = torch.empty(m, 128, device="cuda")
            q.run_dlpack([x], [a])
            mm.run_dlpack([a], [want])
            torch.cuda.synchronize()
            self.assertTrue(torch.equal(got, want), f"m = {m}; {self.where}")
            self.assertTrue(torch.equal(got_again, want), f"m = {m}, second call; {self.where}")

    def test_device_chain_checks_its_plans_and_buffer(self):
        import torch
        acc = self.cuda_accelerator()
        p = qforge.QuantizationParams.per_tensor_affine(qforge.DType.int8, 0.05, 3)
        w = qforge.QuantizationParams.per_tensor_symmetric(qforge.DType.int8, 0.01)
        codes = np.ones((8, 6), dtype=np.int8)
        q = acc.prepare_quantize([4, 6], p, residency="device")
        mm = acc.prepare_matmul(4, 8, 6, p, w, b_layout="nk", b=codes, residency="device")
        between = torch.empty(4, 6, dtype=torch.int8, device="cuda")
        chain = qforge._qforge._DeviceChain(q, mm, between)
        self.assertEqual(chain.between_bytes, 24)
        x = torch.randn(4, 6, device="cuda")
        y = torch.empty(4, 8, device="cuda")
        chain.run(x.data_ptr(), y.data_ptr())
        a = torch.empty(4, 6, dtype=torch.int8, device="cuda")
        want = torch.empty(4, 8, device="cuda")
        q.run_dlpack([x], [a])
        mm.run_dlpack([a], [want])
        self.assertTrue(torch.equal(y, want), self.where)
        with self.assertRaisesRegex(ValueError, "null device address"):
            chain.run(0, y.data_ptr())
        mm5 = acc.prepare_matmul(5, 8, 6, p, w, b_layout="nk", b=codes, residency="device")
        with self.assertRaisesRegex(ValueError, "writes 24 bytes and the second reads 30"):
            qforge._qforge._DeviceChain(q, mm5, between)
        with self.assertRaisesRegex(ValueError, "second plan must read only its first input"):
            qforge._qforge._DeviceChain(
                q, acc.prepare_matmul(4, 8, 6, p, w, residency="device"), between)
        with self.assertRaisesRegex(TypeError, "holds uint8; expected int8"):
            qforge._qforge._DeviceChain(q, mm, between.to(torch.uint8))
        with self.assertRaisesRegex(ValueError, "is on cpu; the plan runs on cuda"):
            qforge._qforge._DeviceChain(q, mm, between.cpu())
        cpu = scalar_accelerator()
        with self.assertRaisesRegex(ValueError, "both plans must run on one CUDA device"):
            qforge._qforge._DeviceChain(cpu.prepare_quantize([4, 6], p), mm, between)
        with self.assertRaisesRegex(ValueError, r"cuda:0 prepared with residency='host'; prepare "
                                    r"it with residency='device'"):
            qforge._qforge._DeviceChain(acc.prepare_quantize([4, 6], p), mm, between)

    def test_plan_run_dlpack_checks_devices_and_sizes(self):
        import torch
        acc = self.cuda_accelerator()
        p = qforge.QuantizationParams.per_tensor_affine(qforge.DType.int8, 0.05, 3)
        plan = acc.prepare_quantize([4, 6], p, residency="device")
        self.assertFalse(plan.host_memory)
        self.assertFalse(plan.staged)
        x = torch.randn(4, 6, device="cuda")
        q = torch.empty(4, 6, dtype=torch.int8, device="cuda")
        plan.run_dlpack([x], [q])
        expected = qforge.reference.quantize(x.cpu().numpy(), p)
        np.testing.assert_array_equal(q.cpu().numpy(), expected, err_msg=self.where)
        with self.assertRaisesRegex(TypeError, r"numpy arrays, and this plan runs on cuda:0 "
                                    r"memory \(prepared with residency='device'\)"):
            plan.run(x.cpu().numpy())
        with self.assertRaisesRegex(ValueError, r"is on cpu; the plan runs on cuda:0 \(prepared "
                                    r"with residency='device'\); prepare it with "
                                    r"residency='host'"):
            plan.run_dlpack([x.cpu()], [q])
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            plan.run_dlpack([torch.randn(6, 4, device="cuda").t()], [q])
        with self.assertRaisesRegex(ValueError, "holds 20 bytes"):
            plan.run_dlpack([x], [torch.empty(20, dtype=torch.int8, device="cuda")])
        with self.assertRaisesRegex(TypeError, "holds float64; expected float32"):
            plan.run_dlpack([x.double()], [q])

    def test_residency_host_plans_of_the_cuda_plugin_take_host_arrays(self):
        # residency='host' (the default): the cuda plugin's plan comes back staged, takes numpy
        # arrays and CPU tensors and gives the device plan's results bit for bit; CUDA tensors
        # are refused with the way to the other residency.
        import torch
        acc = self.cuda_accelerator()
        p = qforge.QuantizationParams.per_tensor_affine(qforge.DType.int8, 0.05, 3)
        w = qforge.QuantizationParams.per_channel(qforge.DType.int8, qforge.Mapping.symmetric, 0,
                                                  [float(v) for v in np.linspace(0.01, 0.02, 8)])
        codes = self.rng.integers(-127, 128, (8, 6), dtype=np.int8)
        bias = self.rng.standard_normal(8).astype(np.float32)
        staged = acc.prepare_matmul(5, 8, 6, p, w, b_layout="nk", b=codes, bias=bias)
        device = acc.prepare_matmul(5, 8, 6, p, w, b_layout="nk", b=codes, bias=bias,
                                    residency="device")
        self.assertEqual((staged.host_memory, staged.staged), (True, True))
        self.assertEqual((device.host_memory, device.staged), (False, False))
        a = self.rng.integers(-128, 128, (5, 6), dtype=np.int8)
        got = staged.run(a)
        got_dlpack = torch.empty(5, 8)
        staged.run_dlpack([torch.from_numpy(a)], [got_dlpack])
        want = torch.empty(5, 8, device="cuda")
        device.run_dlpack([torch.from_numpy(a).cuda()], [want])
        np.testing.assert_array_equal(got, want.cpu().numpy(), err_msg=self.where)
        np.testing.assert_array_equal(got_dlpack.numpy(), got, err_msg=self.where)
        with self.assertRaisesRegex(ValueError, r"a is on cuda:0; the plan runs on cpu memory "
                                    r"\(prepared with residency='host'.*residency='device'"):
            staged.run_dlpack([torch.from_numpy(a).cuda()], [got_dlpack])


if __name__ == "__main__":
    unittest.main()
