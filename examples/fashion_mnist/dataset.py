"""Fashion-MNIST's IDX files (Debian's dataset-fashion-mnist) as numpy arrays: images float32
[N, 1, 28, 28] scaled to [0, 1], labels int64, as qforge's IDX reader gives them."""
import gzip
import struct
from pathlib import Path

import numpy as np


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an IDX file of uint8")
    dims = struct.unpack(">" + "I" * ndim, data[4 : 4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_idx_split(data_dir, split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(Path(data_dir) / f"{prefix}-images-idx3-ubyte.gz")
    labels = read_idx(Path(data_dir) / f"{prefix}-labels-idx1-ubyte.gz")
    return (images.astype(np.float32)[:, None, :, :] / 255.0), labels.astype(np.int64)
