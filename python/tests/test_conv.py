"""Convolution plans (Accelerator.prepare_conv): conv_integer exact against a numpy convolution
in int64, conv_dequant bit-equal to the float32 epilogue of docs/NUMERICS.md, and the errors."""

import unittest

import numpy as np

import qforge
from support import SeededTest, random_floats, scalar_accelerator

P = qforge.QuantizationParams


def numpy_conv_integer(xc, zx, wc, zw, stride, pads, dilation, groups):
    """sum (x - zx)(w - zw) over each window, padded positions contributing 0, in int64.
    xc [N, C, H, W] and wc [O, C / groups, KH, KW] codes; zw one per output channel."""
    n, c, h, w = xc.shape
    o, cg, kh, kw = wc.shape
    top, left, bottom, right = pads
    x = np.pad(xc.astype(np.int64) - zx, ((0, 0), (0, 0), (top, bottom), (left, right)))
    wz = wc.astype(np.int64) - np.asarray(zw, np.int64).reshape(o, 1, 1, 1)
    oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + left + right - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, o, oh, ow), np.int64)
    og = o // groups
    for g in range(groups):
        xg = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * dilation[0], j * dilation[1]
                win = xg[:, :, r0:r0 + stride[0] * (oh - 1) + 1:stride[0],
                         c0:c0 + stride[1] * (ow - 1) + 1:stride[1]]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", win,
                                                       wz[g * og:(g + 1) * og, :, i, j])
    return y


class ConvPlans(SeededTest):
    def random_case(self):
        r = self.rng
        groups = int(r.choice([1, 2, 3]))
        c = groups * int(r.integers(1, 4))
        o = groups * int(r.integers(1, 4))
        kh, kw = int(r.integers(1, 4)), int(r.integers(1, 4))
        shape = [int(r.integers(1, 3)), c, int(r.integers(kh + 2, 10)), int(r.integers(kw + 2, 10))]
        return dict(shape=shape, o=o, kh=kh, kw=kw, groups=groups,
                    stride=[int(r.integers(1, 3)), int(r.integers(1, 3))],
                    pads=[int(v) for v in r.integers(0, 3, 4)],
                    dilation=[int(r.integers(1, 3)), int(r.integers(1, 3))])

    def test_conv_integer_and_conv_dequant_equal_numpy(self):
        acc = scalar_accelerator()
        for _ in range(6):
            t = self.random_case()
            with self.subTest(**t):
                n, c, h, w = t["shape"]
                o, g = t["o"], t["groups"]
                w_shape = [o, c // g, t["kh"], t["kw"]]
                px = P.per_tensor_affine(qforge.uint8, 0.05, int(self.rng.integers(0, 256)))
                scales = self.rng.uniform(0.01, 0.1, o).astype(np.float32)
                pw = P.per_channel(qforge.int8, qforge.symmetric, 0, scales.tolist())
                xc = qforge.reference.quantize(random_floats(self.rng, t["shape"]), px)
                wc = qforge.reference.quantize(random_floats(self.rng, w_shape, 2.0), pw)
                bias = random_floats(self.rng, (o,))
                geometry = dict(stride=t["stride"], pads=t["pads"], dilation=t["dilation"],
                                groups=g)
                expected = numpy_conv_integer(xc, px.zero_points[0], wc, [0] * o, **geometry)
                plan = acc.prepare_conv(t["shape"], px, wc, w_shape, pw, integer=True,
                                        **geometry)
                got = plan.run(xc)
                self.assertEqual(got.dtype, np.int32)
                np.testing.assert_array_equal(got, expected, err_msg=self.where)
                plan = acc.prepare_conv(t["shape"], px, wc, w_shape, pw, bias=bias, **geometry)
                y = plan.run(xc)
                ref = ((expected.astype(np.float32) * np.float32(px.scales[0])) *
                       scales.reshape(1, o, 1, 1)) + bias.reshape(1, o, 1, 1)
                np.testing.assert_array_equal(y, ref, err_msg=self.where)

    def test_errors(self):
        acc = scalar_accelerator()
        px = P.per_tensor_affine(qforge.uint8, 0.05, 128)
        pw = P.per_tensor_symmetric(qforge.int8, 0.1)
        wc = np.zeros((4, 3, 3, 3), np.int8)
        with self.assertRaisesRegex(ValueError, r"x_shape \[1, 3, 8\]; expected \[N, C, H, W\]"):
            acc.prepare_conv([1, 3, 8], px, wc, [4, 3, 3, 3], pw)
        with self.assertRaisesRegex(ValueError, "groups = 2 does not fit"):
            acc.prepare_conv([1, 3, 8, 8], px, wc, [4, 3, 3, 3], pw, groups=2)
        with self.assertRaisesRegex(ValueError, r"bias has shape \[3\]; expected \[4\]"):
            acc.prepare_conv([1, 3, 8, 8], px, wc, [4, 3, 3, 3], pw,
                             bias=np.zeros(3, np.float32))
        with self.assertRaisesRegex(ValueError, "w"):
            acc.prepare_conv([1, 3, 8, 8], px, wc[:2], [4, 3, 3, 3], pw)
        # A kernel larger than the padded input: the core's descriptor check, as a ValueError.
        with self.assertRaisesRegex(ValueError, "kernel along H spans 3 positions but the "
                                                "padded input has 2"):
            acc.prepare_conv([1, 3, 2, 2], px, wc, [4, 3, 3, 3], pw)


if __name__ == "__main__":
    unittest.main()
