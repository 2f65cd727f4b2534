"""Calibration observers fed numpy batches: ranges and params as core computes them."""

import unittest

import numpy as np

import qforge
from support import SeededTest, random_floats

P = qforge.QuantizationParams


class Observers(SeededTest):
    def test_minmax_per_tensor(self):
        o = qforge.MinMaxObserver()
        batches = [random_floats(self.rng, (4, 5)) for _ in range(3)]
        for b in batches:
            o.observe(b)
        lo = min(float(b.min()) for b in batches)
        hi = max(float(b.max()) for b in batches)
        self.assertEqual(o.ranges(), [(lo, hi)], self.where)
        self.assertEqual(o.params(qforge.uint8, qforge.affine),
                         P.from_range(qforge.uint8, qforge.affine, lo, hi))
        self.assertEqual(o.stats, {"batches": 3, "empty_batches": 0, "values": 60,
                                   "non_finite": 0})
        self.assertEqual(o.kind, "minmax")

    def test_minmax_per_channel(self):
        o = qforge.MinMaxObserver(axis=1)
        x = random_floats(self.rng, (6, 3, 2))
        x[0, 0, 0] = np.nan
        o.observe(x)
        self.assertEqual(o.channels, 3)
        self.assertEqual(o.stats["non_finite"], 1)
        for c, (lo, hi) in enumerate(o.ranges()):
            ch = x[:, c, :]
            self.assertEqual((lo, hi), (float(np.nanmin(ch)), float(np.nanmax(ch))), self.where)
        p = o.params(qforge.int8, qforge.symmetric)
        self.assertEqual((p.granularity, p.scheme.axis, p.count),
                         (qforge.Granularity.per_channel, 1, 3))

    def test_moving_average_follows_pytorch(self):
        c = 0.25
        o = qforge.MovingAverageMinMaxObserver(c)
        lo = hi = None
        for _ in range(4):
            b = random_floats(self.rng, (10,))
            o.observe(b)
            bl, bh = np.float32(b.min()), np.float32(b.max())
            if lo is None:
                lo, hi = bl, bh
            else:
                lo = np.float32(lo + np.float32(c) * (bl - lo))
                hi = np.float32(hi + np.float32(c) * (bh - hi))
        self.assertEqual(o.ranges(), [(float(lo), float(hi))], self.where)

    def test_histogram_methods(self):
        o = qforge.HistogramObserver(method="percentile", percentile=99.0, bins=256)
        x = random_floats(self.rng, (4096,))
        o.observe(x)
        (lo, hi), = o.ranges(qforge.int8, qforge.symmetric)
        self.assertLess(hi, float(np.abs(x).max()), self.where)  # the 1% tail is clipped
        for method in ("minmax", "entropy", "mse", "adaptive"):
            p = o.params_by(method, qforge.int8, qforge.symmetric)
            self.assertEqual(p.dtype, qforge.int8)
        self.assertEqual((o.bins, o.method), (256, "percentile"))

    def test_errors(self):
        with self.assertRaisesRegex(qforge.Error, "no|finite|data"):
            qforge.MinMaxObserver().params()
        with self.assertRaisesRegex(ValueError, "method = 'kl'"):
            qforge.HistogramObserver(method="kl")
        with self.assertRaises(qforge.InvalidArgumentError):
            qforge.HistogramObserver(bins=0)
        o = qforge.MinMaxObserver()
        with self.assertRaisesRegex(TypeError, "batch has dtype float64; expected float32"):
            o.observe(np.zeros(3))
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            o.observe(np.zeros((3, 4), np.float32).T)
        with self.assertRaisesRegex(ValueError, "convention = 'onnx'"):
            o.observe(np.ones(3, np.float32))
            o.params(convention="onnx")


if __name__ == "__main__":
    unittest.main()
