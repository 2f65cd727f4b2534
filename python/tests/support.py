"""Shared helpers of the Python tests: seeded random data (the seed is printed on failure and
can be replayed with QFORGE_TEST_SEED), accelerators restricted to one plugin, and a numpy
re-implementation of the quantize/dequantize numerics of docs/NUMERICS.md."""

import os
import random
import unittest

import numpy as np

import qforge


class SeededTest(unittest.TestCase):
    """A TestCase with a fresh numpy Generator per test; pass ``self.where`` as the message of
    every comparison so that a failure names the seed (replay with QFORGE_TEST_SEED=<seed>)."""

    def setUp(self):
        self.seed = int(os.environ.get("QFORGE_TEST_SEED", random.randrange(2**32)))
        self.rng = np.random.default_rng(self.seed)
        self.where = f"seed {self.seed} (replay with QFORGE_TEST_SEED={self.seed})"


def scalar_accelerator():
    """The reference plugin alone, no tuning, no cache: deterministic and exact."""
    return qforge.Accelerator(plugins=["cpu_scalar"], online_tuning=False, use_cache=False)


def random_floats(rng, shape, scale=4.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def numpy_quantize(x, params):
    """q = saturate(round_half_to_even(x / s) + z) in float32 with a true division; NaN -> z.
    Affine and symmetric mappings, any granularity; returns int32 codes of x's shape."""
    x = np.asarray(x, dtype=np.float32)
    s, z = _expand(params, x.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = x / s
    r = np.rint(v).astype(np.float64) + z
    q = np.where(np.isnan(v), z, np.clip(np.nan_to_num(r, posinf=2**40, neginf=-2**40),
                                         params.qmin, params.qmax))
    return q.astype(np.int32)


def numpy_dequantize(codes, params):
    """x = (q - z) * s in float32."""
    s, z = _expand(params, codes.shape)
    return ((codes - z).astype(np.float32) * s).astype(np.float32)


def _expand(params, shape):
    """Per-element scale (float32) and zero point (int64) arrays for a tensor of `shape`."""
    scales = params.scales.astype(np.float32)
    zps = params.zero_points.astype(np.int64)
    g = params.granularity
    if g == qforge.Granularity.per_tensor:
        return np.full(shape, scales[0], np.float32), np.full(shape, zps[0], np.int64)
    if g == qforge.Granularity.per_channel:
        axis = params.scheme.axis % len(shape)
        view = [1] * len(shape)
        view[axis] = shape[axis]
        return (np.broadcast_to(scales.reshape(view), shape),
                np.broadcast_to(zps.reshape(view), shape))
    block = params.scheme.block_size
    last = shape[-1]
    blocks = -(-last // block)
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    col_block = np.arange(last) // block
    idx = (np.arange(rows)[:, None] * blocks + col_block[None, :]).reshape(shape)
    return scales[idx], zps[idx]
