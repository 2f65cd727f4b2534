"""QuantizedTensor @ QuantizedTensor (fused matmul_dequant through the accelerator), plans and
accelerator options: equal to core's reference and to numpy."""

import os
import tempfile
import unittest

import numpy as np

import qforge
from support import SeededTest, random_floats, scalar_accelerator

P = qforge.QuantizationParams


def numpy_matmul_dequant(a, b, bias=None):
    """Per-tensor A and B: y = (float(C) * sa) * sb + bias in float32, C exact in int64."""
    ca = a.int_repr().astype(np.int64) - int(a.params.zero_points[0])
    cb = b.int_repr().astype(np.int64) - int(b.params.zero_points[0])
    c = (ca @ cb).astype(np.float32)
    y = (c * a.params.scales[0]) * b.params.scales[0]
    return y if bias is None else y + bias


class Matmul(SeededTest):
    def shapes(self):
        return [(1, 1, 1), (1, 7, 5), (4, 3, 2), (9, 33, 17), (16, 64, 31)]

    def test_per_tensor_equals_reference_and_numpy(self):
        acc = scalar_accelerator()
        for m, k, n in self.shapes():
            with self.subTest(m=m, k=k, n=n):
                a = qforge.quantize(random_floats(self.rng, (m, k)),
                                    P.per_tensor_affine(qforge.uint8, 0.05, 130), acc)
                b = qforge.quantize(random_floats(self.rng, (k, n)),
                                    P.per_tensor_symmetric(qforge.int8, 0.04), acc)
                bias = random_floats(self.rng, (n,))
                y = qforge.matmul(a, b, bias=bias)
                ref = qforge.reference.matmul_dequant(a.data, [m, k], a.params, b.data, [k, n],
                                                      b.params, "kn", bias)
                np.testing.assert_array_equal(y, ref, err_msg=self.where)
                np.testing.assert_array_equal(y, numpy_matmul_dequant(a, b, bias),
                                              err_msg=self.where)
                np.testing.assert_array_equal(a @ b, numpy_matmul_dequant(a, b),
                                              err_msg=self.where)

    def test_per_row_per_column_and_blockwise(self):
        acc = scalar_accelerator()
        m, k, n = 5, 40, 6
        x = random_floats(self.rng, (m, k))
        a = qforge.quantize(x, P.per_channel(qforge.int8, qforge.affine, 0,
                                             self.rng.uniform(0.01, 0.1, m).tolist(),
                                             self.rng.integers(-5, 5, m).tolist()), acc)
        w = random_floats(self.rng, (k, n))
        b = qforge.quantize(w, P.per_channel(qforge.int8, qforge.symmetric, 1,
                                             self.rng.uniform(0.01, 0.1, n).tolist()), acc)
        ref = qforge.reference.matmul_dequant(a.data, [m, k], a.params, b.data, [k, n], b.params)
        np.testing.assert_array_equal(a @ b, ref, err_msg=self.where)
        # int4 block-wise B in nn.Linear's [N, K] layout.
        wt = np.ascontiguousarray(w.T)
        blocks = n * -(-k // 16)
        bq = qforge.quantize(wt, P.blockwise(qforge.int4, qforge.symmetric, 16,
                                             self.rng.uniform(0.05, 0.3, blocks).tolist()), acc)
        y = qforge.matmul(a, bq, transpose_b=True, accelerator=acc)
        ref = qforge.reference.matmul_dequant(a.data, [m, k], a.params, bq.data, [n, k],
                                              bq.params, "nk")
        np.testing.assert_array_equal(y, ref, err_msg=self.where)

    def test_default_accelerator_within_tolerance(self):
        # Plugins other than the reference may sum in another order: NMSE as NUMERICS.md says.
        a = qforge.quantize(random_floats(self.rng, (8, 64)), P.per_tensor_affine(qforge.uint8,
                                                                                 0.05, 128))
        b = qforge.quantize(random_floats(self.rng, (64, 16)), P.per_tensor_symmetric(qforge.int8,
                                                                                     0.04))
        y = a @ b
        ref = numpy_matmul_dequant(a, b)
        nmse = float(np.sum((y - ref) ** 2) / max(np.sum(ref ** 2), 1e-30))
        self.assertLessEqual(nmse, 1e-10, self.where)

    def test_mixed_operands_use_float(self):
        a = qforge.quantize(random_floats(self.rng, (3, 4)), P.per_tensor_symmetric(qforge.int8,
                                                                                    0.1))
        f = random_floats(self.rng, (4, 2))
        np.testing.assert_array_equal(a @ f, a.dequantize() @ f)
        g = random_floats(self.rng, (2, 3))
        np.testing.assert_array_equal(g @ a, g @ a.dequantize())

    def test_shape_errors(self):
        p = P.per_tensor_symmetric(qforge.int8, 0.1)
        a = qforge.quantize(np.zeros((3, 4), np.float32), p)
        b = qforge.quantize(np.zeros((5, 2), np.float32), p)
        with self.assertRaisesRegex(ValueError, r"A is \[3, 4\] and B \(kn\) is \[5, 2\]; the K "
                                                "extents differ"):
            a @ b
        c = qforge.quantize(np.zeros((4,), np.float32), p)
        with self.assertRaisesRegex(ValueError, "2-D"):
            a @ c
        with self.assertRaisesRegex(ValueError, r"bias has shape \[3\]; expected \[2\]"):
            qforge.matmul(a, qforge.quantize(np.zeros((4, 2), np.float32), p),
                          bias=np.zeros(3, np.float32))


class Plans(SeededTest):
    def test_quantize_plan_matches_reference(self):
        acc = scalar_accelerator()
        p = P.per_channel(qforge.uint8, qforge.affine, 0, [0.1, 0.2, 0.3], [120, 128, 136])
        plan = acc.prepare_quantize([3, 8], p)
        self.assertEqual(plan.backend, "cpu_scalar")
        for _ in range(3):
            x = random_floats(self.rng, (3, 8))
            np.testing.assert_array_equal(plan.run(x), qforge.reference.quantize(x, p),
                                          err_msg=self.where)
        deq = acc.prepare_dequantize([3, 8], p)
        q = qforge.reference.quantize(x, p)
        np.testing.assert_array_equal(deq.run(q), qforge.reference.dequantize(q, [3, 8], p))

    def test_residency_of_a_cpu_plugin_is_host_memory_either_way(self):
        # residency='device' means the winner's memory, host memory for a CPU plugin: the plan
        # takes numpy arrays like the default one and gives the same bytes; neither is staged.
        acc = scalar_accelerator()
        p = P.per_tensor_affine(qforge.uint8, 0.05, 128)
        x = random_floats(self.rng, (3, 8))
        for residency in ("host", "device"):
            plan = acc.prepare_quantize([3, 8], p, residency=residency)
            self.assertEqual((plan.host_memory, plan.staged), (True, False), residency)
            np.testing.assert_array_equal(plan.run(x), qforge.reference.quantize(x, p),
                                          err_msg=f"residency={residency}; {self.where}")
        pb = P.per_tensor_symmetric(qforge.int8, 0.02)
        b = qforge.reference.quantize(random_floats(self.rng, (8, 4)), pb)
        a = qforge.reference.quantize(x, p)
        np.testing.assert_array_equal(
            acc.prepare_matmul(3, 4, 8, p, pb, b=b, residency="device").run(a),
            acc.prepare_matmul(3, 4, 8, p, pb, b=b).run(a), err_msg=self.where)
        for prepare in (lambda r: acc.prepare_quantize([3, 8], p, residency=r),
                        lambda r: acc.prepare_dequantize([3, 8], p, residency=r),
                        lambda r: acc.prepare_matmul(3, 4, 8, p, pb, residency=r),
                        lambda r: acc.prepare_dynamic_quantize([3, 8], residency=r)):
            with self.assertRaisesRegex(ValueError, r"residency = 'gpu'; expected 'host' .* or "
                                        r"'device'"):
                prepare("gpu")

    def test_run_dlpack_writes_outputs_in_place(self):
        acc = scalar_accelerator()
        m, k, n = 5, 12, 3
        pa = P.per_tensor_affine(qforge.uint8, 0.05, 128)
        pb = P.per_channel(qforge.int8, qforge.symmetric, 1, self.rng.uniform(0.01, 0.1, n).tolist())
        b = qforge.reference.quantize(random_floats(self.rng, (k, n)), pb)
        plan = acc.prepare_matmul(m, n, k, pa, pb, b=b)
        self.assertTrue(plan.host_memory)
        x = random_floats(self.rng, (m, k))
        a = np.empty((m, k), np.uint8)
        acc.prepare_quantize([m, k], pa).run_dlpack([x], [a])
        np.testing.assert_array_equal(a, qforge.reference.quantize(x, pa), err_msg=self.where)
        y = np.full((m, n), np.nan, np.float32)
        plan.run_dlpack([a], [y])
        np.testing.assert_array_equal(y, plan.run(a), err_msg=self.where)
        with self.assertRaisesRegex(TypeError, r"run_dlpack takes 1 input\(s\) \(a\); got 2"):
            plan.run_dlpack([a, b], [y])
        with self.assertRaisesRegex(TypeError, r"writes 1 output\(s\); got 0"):
            plan.run_dlpack([a], [])
        with self.assertRaisesRegex(TypeError, "a holds int8; expected uint8"):
            plan.run_dlpack([a.view(np.int8)], [y])
        with self.assertRaisesRegex(ValueError, "output 0 holds 80 bytes; the plan reads 60"):
            plan.run_dlpack([a], [np.empty((m, n + 1), np.float32)])
        with self.assertRaisesRegex(TypeError, "expected a DLPack producer"):
            plan.run_dlpack([a.tolist()], [y])
        with self.assertRaises((BufferError, TypeError, ValueError)):
            readonly = np.zeros((m, n), np.float32)
            readonly.flags.writeable = False
            plan.run_dlpack([a], [readonly])

    def test_matmul_plan_with_fixed_weights(self):
        acc = scalar_accelerator()
        m, k, n = 6, 20, 7
        pa = P.per_tensor_affine(qforge.uint8, 0.05, 128)
        pb = P.per_channel(qforge.int8, qforge.symmetric, 1, self.rng.uniform(0.01, 0.1, n).tolist())
        b = qforge.reference.quantize(random_floats(self.rng, (k, n)), pb)
        bias = random_floats(self.rng, (n,))
        plan = acc.prepare_matmul(m, n, k, pa, pb, b=b, bias=bias)
        a = qforge.reference.quantize(random_floats(self.rng, (m, k)), pa)
        y = plan.run(a)
        ref = qforge.reference.matmul_dequant(a, [m, k], pa, b, [k, n], pb, "kn", bias)
        np.testing.assert_array_equal(y, ref, err_msg=self.where)
        c = acc.prepare_matmul(m, n, k, pa, pb, integer=True).run(a, b)
        self.assertEqual(c.dtype, np.int32)
        with self.assertRaisesRegex(TypeError, r"Plan.run takes 1 array\(s\) \(a\); got 2"):
            plan.run(a, b)
        with self.assertRaisesRegex(ValueError, "a holds 119 bytes"):
            plan.run(a.reshape(-1)[:-1].copy())
        with self.assertRaisesRegex(TypeError, "a has dtype int8; expected uint8"):
            plan.run(a.astype(np.int8))
        with self.assertRaisesRegex(TypeError, "expected a numpy array"):
            plan.run([1, 2])

    def test_policy(self):
        acc = qforge.Accelerator(plugins=["cpu_scalar"], device_kind="cpu",
                                 include_transfers=False, use_cache=False)
        self.assertEqual(acc.policy, {"plugins": ["cpu_scalar"], "device_kind": "cpu",
                                      "include_transfers": False})
        self.assertIn("cpu_scalar", acc.plugins)
        self.assertEqual(qforge.Accelerator(use_cache=False).policy["plugins"], [])

    def test_tuning_cache_path(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tuning.json")
            acc = qforge.Accelerator(plugins=["cpu_scalar"], use_cache=True, cache_path=path,
                                     online_tuning=True, budget_s=0.2)
            self.assertEqual(str(acc.cache_path), path)
            r = acc.tune_quantize([64], P.per_tensor_symmetric(qforge.int8, 0.1))
            self.assertEqual(r["winner"]["plugin"], "cpu_scalar")
            self.assertTrue(os.path.exists(path))
            again = qforge.Accelerator(plugins=["cpu_scalar"], cache_path=path, use_cache=True)
            r2 = again.tune_quantize([64], P.per_tensor_symmetric(qforge.int8, 0.1))
            self.assertEqual(r2["source"], "cache")
        self.assertIsNone(qforge.Accelerator(use_cache=False).cache_path)


if __name__ == "__main__":
    unittest.main()
