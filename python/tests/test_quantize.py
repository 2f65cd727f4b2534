"""quantize/dequantize on numpy arrays and DLPack producers: through the accelerator, equal
to core's reference and to a numpy re-implementation, bit for bit; bad arrays refused."""

import unittest

import numpy as np

import qforge
from support import SeededTest, numpy_dequantize, numpy_quantize, random_floats, scalar_accelerator

P = qforge.QuantizationParams


def params_cases(rng, shape):
    """(label, params) for every dtype with each scheme core has that fits `shape`."""
    cases = []
    last = shape[-1]
    for dt in (qforge.int8, qforge.uint8, qforge.int16, qforge.uint16, qforge.int4, qforge.uint4):
        span = dt.qmax - dt.qmin
        s = float(rng.uniform(0.01, 0.5))
        z = int(rng.integers(dt.qmin, dt.qmax + 1))
        cases.append((f"{dt.name} per-tensor affine", P.per_tensor_affine(dt, s, z)))
        cases.append((f"{dt.name} per-tensor symmetric", P.per_tensor_symmetric(dt, s)))
        for axis in (0, -1):
            n = shape[axis]
            scales = rng.uniform(0.01, 0.5, n).astype(np.float32).tolist()
            zps = rng.integers(dt.qmin, dt.qmax + 1, n).tolist()
            cases.append((f"{dt.name} per-channel affine axis {axis}",
                          P.per_channel(dt, qforge.affine, axis, scales, zps)))
            cases.append((f"{dt.name} per-channel symmetric axis {axis}",
                          P.per_channel(dt, qforge.symmetric, axis, scales)))
        for block in (4, 32):
            count = int(np.prod(shape[:-1])) * -(-last // block)
            scales = rng.uniform(0.01, 0.5, count).astype(np.float32).tolist()
            zps = rng.integers(dt.qmin, dt.qmax + 1, count).tolist()
            cases.append((f"{dt.name} block({block}) affine",
                          P.blockwise(dt, qforge.affine, block, scales, zps)))
            cases.append((f"{dt.name} block({block}) symmetric",
                          P.blockwise(dt, qforge.symmetric, block, scales)))
        del span
    return cases


class QuantizeMatchesReference(SeededTest):
    def test_every_dtype_and_scheme_bit_exact(self):
        acc = qforge.default_accelerator()
        for shape in [(7,), (3, 5), (2, 3, 33), (1, 1)]:
            x = random_floats(self.rng, shape)
            x.flat[0] = np.nan
            if x.size > 2:
                x.flat[1] = np.inf
                x.flat[2] = -np.inf
            for label, p in params_cases(self.rng, shape):
                with self.subTest(shape=shape, params=label):
                    t = qforge.quantize(x, p, accelerator=acc)
                    ref = qforge.reference.quantize(x, p)
                    np.testing.assert_array_equal(t.data, ref, err_msg=self.where)
                    codes = t.int_repr()
                    np.testing.assert_array_equal(codes, numpy_quantize(x, p), err_msg=self.where)
                    y = t.dequantize()
                    np.testing.assert_array_equal(
                        y, qforge.reference.dequantize(ref, list(shape), p), err_msg=self.where)
                    np.testing.assert_array_equal(y, numpy_dequantize(codes, p),
                                                  err_msg=self.where)

    def test_binary_and_logarithmic_match_reference(self):
        x = random_floats(self.rng, (4, 9))
        for p in (P.per_tensor_symmetric(qforge.binary, 1.0),
                  P.logarithmic(qforge.int8, float(np.abs(x).max())),
                  P.logarithmic(qforge.int4, 2.0)):
            with self.subTest(params=str(p)):
                t = qforge.quantize(x, p, accelerator=scalar_accelerator())
                ref = qforge.reference.quantize(x, p)
                np.testing.assert_array_equal(t.data, ref, err_msg=self.where)
                np.testing.assert_array_equal(t.dequantize(),
                                              qforge.reference.dequantize(ref, [4, 9], p))

    def test_design_example(self):
        # DESIGN.md: DynamicQuantizeLinear([0, 2, -3, -2.5, 1.34, 0.5]) -> s, z = 0.019607844, 153
        p = P.per_tensor_affine(qforge.uint8, 0.019607844, 153)
        t = qforge.quantize(np.array([0, 2, -3, -2.5, 1.34, 0.5], np.float32), p)
        self.assertEqual(t.data.tolist(), [153, 255, 0, 26, 221, 179])

    def test_float16_input(self):
        x = random_floats(self.rng, (5, 6)).astype(np.float16)
        p = P.per_tensor_symmetric(qforge.int8, 0.05)
        np.testing.assert_array_equal(qforge.quantize(x, p).data, qforge.reference.quantize(x, p),
                                      err_msg=self.where)


class FakeDLPack:
    """A DLPack producer that is not a numpy array (as a torch CPU tensor would be)."""

    def __init__(self, array, device=(1, 0)):
        self._array = array
        self._device = device

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._device


class DLPackInput(SeededTest):
    def test_dlpack_producer_is_read_in_place(self):
        x = random_floats(self.rng, (6, 4))
        p = P.per_tensor_affine(qforge.int8, 0.03, -5)
        viewed = qforge._arrays.as_array(FakeDLPack(x))
        self.assertTrue(np.shares_memory(viewed, x), "numpy.from_dlpack must not copy")
        t = qforge.quantize(FakeDLPack(x), p)
        np.testing.assert_array_equal(t.data, qforge.reference.quantize(x, p), err_msg=self.where)

    def test_device_memory_is_refused(self):
        x = random_floats(self.rng, (3,))
        with self.assertRaisesRegex(ValueError, "lives on cuda:0; .*host memory"):
            qforge.quantize(FakeDLPack(x, device=(2, 0)), P.per_tensor_symmetric(qforge.int8, 1))


class BadArrays(SeededTest):
    p = P.per_tensor_symmetric(qforge.int8, 0.1)

    def test_wrong_float_type_is_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "x has dtype float64; expected float32 or float16"):
            qforge.quantize(np.zeros(4), self.p)
        with self.assertRaisesRegex(TypeError, "has dtype int32"):
            qforge.quantize(np.zeros(4, np.int32), self.p)

    def test_not_an_array_is_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "x is a list; expected a numpy array"):
            qforge.quantize([1.0, 2.0], self.p)

    def test_non_contiguous_is_a_value_error(self):
        x = random_floats(self.rng, (4, 6))
        with self.assertRaisesRegex(ValueError, r"x of shape \[6, 4\] is not C-contiguous"):
            qforge.quantize(x.T, self.p)
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            qforge.quantize(x[:, ::2], self.p)

    def test_misaligned_is_a_value_error(self):
        raw = bytearray(4 * 8 + 1)
        x = np.frombuffer(raw, dtype=np.float32, offset=1, count=8)
        with self.assertRaisesRegex(ValueError, "not aligned"):
            qforge.quantize(x, self.p)

    def test_params_that_do_not_fit_the_shape(self):
        p = P.per_channel(qforge.int8, qforge.symmetric, 1, [0.1, 0.2, 0.3])
        with self.assertRaises(qforge.ShapeMismatchError) as cm:
            qforge.quantize(np.zeros((2, 4), np.float32), p)
        self.assertIsInstance(cm.exception, ValueError)
        self.assertIsInstance(cm.exception, RuntimeError)

    def test_storage_of_the_wrong_size(self):
        with self.assertRaisesRegex(ValueError, r"q holds 3 bytes; a int8 tensor of shape \[4\] "
                                                "needs 4"):
            qforge.reference.dequantize(np.zeros(3, np.int8), [4], self.p)
        with self.assertRaisesRegex(TypeError, "q has dtype uint8; expected int8"):
            qforge.reference.dequantize(np.zeros(4, np.uint8), [4], self.p)


if __name__ == "__main__":
    unittest.main()
