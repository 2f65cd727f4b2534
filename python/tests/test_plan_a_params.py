"""Plans of matmul_dequant with A's params given at run (prepare_matmul(..., a_params_at_run=True))
and of dynamic_quantize_linear (prepare_dynamic_quantize): one plan, B and the bias packed once,
runs with fresh A codes and fresh params against core's reference, and the errors."""

import unittest

import numpy as np

import qforge
from support import SeededTest, random_floats, scalar_accelerator

P = qforge.QuantizationParams


def plugin_accelerator(name):
    return qforge.Accelerator(plugins=[name], online_tuning=False, use_cache=False)


class AParamsAtRun(SeededTest):
    def weights(self, n, k):
        codes = self.rng.integers(-127, 128, (n, k)).astype(np.int8)
        scales = [float(s) for s in self.rng.uniform(0.005, 0.05, n)]
        return codes, P.per_channel(qforge.int8, qforge.symmetric, 0, scales)

    def check_plugin(self, acc, exact):
        for m, n, k, a_dtype, mapping in ((1, 7, 33, qforge.uint8, qforge.affine),
                                          (5, 16, 64, qforge.uint8, qforge.affine),
                                          (17, 9, 40, qforge.int8, qforge.affine),
                                          (4, 12, 31, qforge.int8, qforge.symmetric)):
            codes, wp = self.weights(n, k)
            bias = random_floats(self.rng, (n,), 1.0)
            placeholder = (P.per_tensor_affine(a_dtype, 1.0, 0) if mapping == qforge.affine
                           else P.per_tensor_symmetric(a_dtype, 1.0))
            plan = acc.prepare_matmul(m, n, k, placeholder, wp, b_layout="nk", b=codes,
                                      bias=bias, a_params_at_run=True)
            self.assertTrue(plan.a_params_at_run)
            self.assertIn("a_params=at_run", plan.description)
            for run in range(3):  # one plan, new params on every run
                x = random_floats(self.rng, (m, k), float(self.rng.uniform(0.1, 8))) + \
                    np.float32(self.rng.uniform(-3, 3))
                p = P.from_range(a_dtype, mapping, float(x.min()), float(x.max()))
                a = qforge.reference.quantize(x, p)
                want = qforge.reference.matmul_dequant(a, [m, k], p, codes, [n, k], wp, "nk",
                                                       bias)
                got = plan.run(a, a_params=p)
                zp = p.zero_points[0] if len(p.zero_points) else (0 if a_dtype == qforge.int8
                                                                  else 128)
                got_arrays = plan.run(a, np.array([p.scales[0]], np.float32),
                                      np.array([zp], np.int32))
                where = f"{plan!r}, run {run}; {self.where}"
                np.testing.assert_array_equal(got, got_arrays, err_msg=where)
                if exact:
                    np.testing.assert_array_equal(got, want, err_msg=where)
                else:
                    np.testing.assert_allclose(got, want, rtol=1e-5,
                                               atol=1e-6 * np.abs(want).max(), err_msg=where)

    def test_cpu_scalar_equals_the_reference_bit_for_bit(self):
        self.check_plugin(scalar_accelerator(), exact=True)

    def test_cpu_x86(self):
        acc = plugin_accelerator("cpu_x86")
        if "cpu_x86" not in acc.plugins:
            self.skipTest("the cpu_x86 plugin is not loaded here")
        self.check_plugin(acc, exact=False)

    def test_dynamic_quantize_plan_equals_from_range_and_quantize(self):
        for acc in (scalar_accelerator(), qforge.Accelerator(online_tuning=False,
                                                             use_cache=False)):
            for shape in ([1, 1], [3, 37], [64, 128]):
                x = random_floats(self.rng, shape, float(self.rng.uniform(0.1, 5))) + \
                    np.float32(self.rng.uniform(-4, 4))
                plan = acc.prepare_dynamic_quantize(shape)
                if not plan.host_memory:
                    continue  # a device plan takes tensors (test_torch checks it on CUDA)
                codes, scale, zero_point = plan.run(x)
                p = P.from_range(qforge.uint8, qforge.affine, float(x.min()), float(x.max()))
                where = f"{plan!r} {shape}; {self.where}"
                self.assertEqual((scale.dtype, scale.shape), (np.float32, (1,)), where)
                self.assertEqual((zero_point.dtype, zero_point.shape), (np.uint8, (1,)), where)
                self.assertEqual(scale[0], np.float32(p.scales[0]), where)
                self.assertEqual(int(zero_point[0]), p.zero_points[0], where)
                np.testing.assert_array_equal(codes, qforge.reference.quantize(x, p),
                                              err_msg=where)

    def test_errors(self):
        acc = scalar_accelerator()
        codes, wp = self.weights(8, 6)
        u8 = P.per_tensor_affine(qforge.uint8, 1.0, 0)
        plan = acc.prepare_matmul(4, 8, 6, u8, wp, b_layout="nk", b=codes, a_params_at_run=True)
        a = np.zeros((4, 6), np.uint8)
        p = P.per_tensor_affine(qforge.uint8, 0.1, 7)
        with self.assertRaisesRegex(TypeError, r"takes 3 array\(s\) \(a, a_scale, a_zero_point\)"
                                               r"; got 1; A's scale and zero point go last"):
            plan.run(a)
        with self.assertRaisesRegex(TypeError, "a_scale has dtype float64; expected float32"):
            plan.run(a, np.array([0.1]), np.array([7], np.int32))
        with self.assertRaisesRegex(TypeError, "a_zero_point has dtype int64; expected int32"):
            plan.run(a, np.array([0.1], np.float32), np.array([7]))
        with self.assertRaisesRegex(ValueError, "a_scale holds 8 bytes; .* reads 4"):
            plan.run(a, np.array([0.1, 0.2], np.float32), np.array([7], np.int32))
        with self.assertRaisesRegex(TypeError, r"takes 1 array\(s\) \(a\); got 3"):
            plan.run(a, np.array([0.1], np.float32), np.array([7], np.int32), a_params=p)
        with self.assertRaisesRegex(TypeError, "the plan's A is uint8 affine"):
            plan.run(a, a_params=P.per_tensor_affine(qforge.int8, 0.1, 7))
        with self.assertRaisesRegex(TypeError, "the plan's A is uint8 affine"):
            plan.run(a, a_params=P.per_tensor_symmetric(qforge.uint8, 0.1))
        with self.assertRaisesRegex(ValueError, "expected per_tensor params"):
            plan.run(a, a_params=P.per_channel(qforge.uint8, qforge.affine, 0, [0.1] * 4,
                                               [1] * 4))
        # Values are checked by the plan's run, as core's reference checks them.
        with self.assertRaisesRegex(qforge.InvalidArgumentError,
                                    r"a_zero_point = 300 .*uint8 range"):
            plan.run(a, np.array([0.1], np.float32), np.array([300], np.int32))
        with self.assertRaisesRegex(qforge.InvalidArgumentError, "a_scale = -1"):
            plan.run(a, np.array([-1.0], np.float32), np.array([3], np.int32))
        fixed = acc.prepare_matmul(4, 8, 6, u8, wp, b_layout="nk", b=codes)
        self.assertFalse(fixed.a_params_at_run)
        with self.assertRaisesRegex(TypeError, "a_params given, but this plan's .* fixes A's "
                                               "params"):
            fixed.run(a, a_params=p)
        with self.assertRaisesRegex(ValueError, "a_params_at_run with integer=True"):
            acc.prepare_matmul(4, 8, 6, u8, wp, b_layout="nk", b=codes, integer=True,
                               a_params_at_run=True)
        with self.assertRaisesRegex(ValueError, "expected per_tensor params"):
            acc.prepare_matmul(4, 8, 6, P.per_channel(qforge.uint8, qforge.affine, 0, [1.0] * 4,
                                                      [0] * 4),
                               wp, b_layout="nk", b=codes, a_params_at_run=True)

    def test_a_plugin_that_refuses_the_flag_says_why(self):
        acc = plugin_accelerator("onednn")
        if "onednn" not in acc.plugins:
            self.skipTest("the onednn plugin is not loaded here")
        codes, wp = self.weights(8, 6)
        with self.assertRaisesRegex(qforge.UnsupportedError,
                                    r"onednn: A's params given at run \(a_params_at_run\)"):
            acc.prepare_matmul(4, 8, 6, P.per_tensor_affine(qforge.uint8, 1.0, 0), wp,
                               b_layout="nk", b=codes, a_params_at_run=True)


if __name__ == "__main__":
    unittest.main()
