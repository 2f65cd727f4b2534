"""Dtypes, schemes and QuantizationParams as core has them; C++ errors as Python exceptions."""

import unittest

import numpy as np

import qforge

P = qforge.QuantizationParams


class DTypes(unittest.TestCase):
    def test_traits_follow_core(self):
        self.assertEqual((qforge.int8.qmin, qforge.int8.qmax), (-128, 127))
        self.assertEqual((qforge.int8.narrow_qmin, qforge.int8.narrow_qmax), (-127, 127))
        self.assertEqual((qforge.uint4.qmin, qforge.uint4.qmax, qforge.uint4.bits), (0, 15, 4))
        self.assertEqual(qforge.int4.storage_bytes(3), 2)
        self.assertEqual(qforge.binary.storage_bytes(9), 2)
        self.assertEqual(qforge.int16.storage_dtype, np.dtype(np.int16))
        self.assertEqual(qforge.uint4.storage_dtype, np.dtype(np.uint8))
        self.assertEqual(qforge.parse_dtype("uint16"), qforge.uint16)

    def test_unknown_dtype_name(self):
        with self.assertRaisesRegex(ValueError, "unknown dtype 'int3'; expected int8, uint8"):
            qforge.parse_dtype("int3")


class Params(unittest.TestCase):
    def test_constructors(self):
        p = P.per_tensor_affine(qforge.uint8, 0.5, 3)
        self.assertEqual((p.dtype, p.mapping, p.granularity), (qforge.uint8, qforge.affine,
                                                               qforge.Granularity.per_tensor))
        self.assertEqual(p.scales.tolist(), [0.5])
        self.assertEqual(p.zero_points.tolist(), [3])
        s = P.per_tensor_symmetric(qforge.uint8, 0.1)
        self.assertEqual(s.zero_points.tolist(), [128])  # symmetric unsigned: the midpoint
        self.assertEqual((s.qmin, s.qmax), (1, 255))
        c = P.per_channel(qforge.int8, qforge.symmetric, -1, [0.1, 0.2, 0.3])
        self.assertEqual((c.scheme.axis, c.count), (-1, 3))
        b = P.blockwise(qforge.int4, qforge.affine, 16, [0.1, 0.2], [1, -2])
        self.assertEqual((b.scheme.block_size, b.zero_points.tolist()), (16, [1, -2]))
        g = P(qforge.int8, qforge.Scheme(qforge.affine, qforge.Granularity.block, 0, 8), [1.0])
        self.assertEqual(g.scheme.block_size, 8)
        self.assertEqual(P.logarithmic(qforge.int8, 2.0).mapping, qforge.logarithmic)
        self.assertEqual(P.per_tensor_affine(qforge.uint8, 0.5, 3), p)
        self.assertNotEqual(P.per_tensor_affine(qforge.uint8, 0.5, 4), p)

    def test_from_range_follows_design(self):
        # Affine: s = (hi - lo) / 255, z = rne(qmin - lo / s); the range always holds 0.
        p = P.from_range(qforge.uint8, qforge.affine, -3.0, 2.0)
        self.assertAlmostEqual(float(p.scales[0]), 5.0 / 255, places=7)
        self.assertEqual(p.zero_points.tolist(), [153])
        self.assertEqual(P.from_range(qforge.int8, qforge.symmetric, 0.0, 0.0).scales.tolist(),
                         [1.0])

    def test_invalid_params_raise_with_core_message(self):
        with self.assertRaises(qforge.InvalidArgumentError) as cm:
            P.per_tensor_affine(qforge.uint8, float("nan"), 0)
        self.assertEqual(str(cm.exception),
                         "QuantizationParams: scale[0] = nan; expected a finite value > 0")
        self.assertEqual(cm.exception.code, "invalid_argument")
        self.assertIsInstance(cm.exception, ValueError)
        with self.assertRaisesRegex(qforge.Error, "zero"):
            P.per_tensor_affine(qforge.int8, 1.0, 300)
        with self.assertRaises(qforge.Error):
            P.per_channel(qforge.int8, qforge.symmetric, 0, [])

    def test_validate_for(self):
        p = P.per_channel(qforge.int8, qforge.symmetric, 1, [0.1, 0.2])
        p.validate_for([3, 2])
        with self.assertRaises(qforge.ShapeMismatchError):
            p.validate_for([3, 4])

    def test_wrong_argument_types(self):
        with self.assertRaises(TypeError):
            P.per_tensor_affine("int8", 1.0, 0)
        with self.assertRaises(TypeError):
            qforge.QuantizedTensor(np.zeros(2, np.int8), (2,), "not params")


class ErrorTranslation(unittest.TestCase):
    def test_every_code(self):
        expected = {
            "invalid_argument": (qforge.InvalidArgumentError, ValueError),
            "shape_mismatch": (qforge.ShapeMismatchError, ValueError),
            "overflow": (qforge.ResultOverflowError, ValueError),
            "unsupported": (qforge.UnsupportedError, RuntimeError),
        }
        for code in ("invalid_argument", "shape_mismatch", "overflow", "unsupported",
                     "unavailable", "plugin_load", "io", "corrupt_data", "backend", "internal"):
            with self.subTest(code=code):
                with self.assertRaises(qforge.Error) as cm:
                    qforge._qforge._raise_error(code, f"message of {code}")
                self.assertEqual(str(cm.exception), f"message of {code}")
                self.assertEqual(cm.exception.code, code)
                self.assertIsInstance(cm.exception, RuntimeError)
                for cls in expected.get(code, ()):
                    self.assertIsInstance(cm.exception, cls)


if __name__ == "__main__":
    unittest.main()
