"""QuantizedTensor: packed storage, its shape and its QuantizationParams."""

import numpy as np

from . import _qforge
from ._arrays import as_array
from ._accel import default_accelerator


def _resolve_dtype(dtype):
    if isinstance(dtype, _qforge.DType):
        return dtype
    if isinstance(dtype, str):
        return _qforge.parse_dtype(dtype)
    raise TypeError(f"dtype is a {type(dtype).__name__}; expected qforge.DType or its name")


class QuantizedTensor:
    """A quantized tensor: ``data`` is its storage (int8/uint8/int16/uint16 arrays of ``shape``;
    int4, uint4 and binary packed into uint8 bytes as in ONNX), ``params`` its QuantizationParams.

    ``t.dequantize()`` gives float32, ``t.astype(...)`` another dtype or params, ``a @ b`` the
    quantized matmul with fused dequantization (float32 out) through the accelerator.
    """

    __slots__ = ("data", "shape", "params", "_accelerator")
    __array_priority__ = 100  # ndarray @ QuantizedTensor defers to __rmatmul__

    def __init__(self, data, shape, params, accelerator=None):
        if not isinstance(params, _qforge.QuantizationParams):
            raise TypeError(f"params is a {type(params).__name__}; expected "
                            "qforge.QuantizationParams")
        data = as_array(data, "data")
        shape = tuple(int(d) for d in shape)
        params.validate_for(list(shape))
        expected = params.dtype.storage_bytes(int(np.prod(shape, dtype=np.int64)))
        if data.dtype != params.dtype.storage_dtype or data.nbytes != expected:
            raise ValueError(f"data is {data.dtype} with {data.nbytes} bytes; a {params.dtype.name} "
                             f"tensor of shape {list(shape)} is stored as "
                             f"{params.dtype.storage_dtype} with {expected} bytes")
        self.data = data
        self.shape = shape
        self.params = params
        self._accelerator = accelerator

    @classmethod
    def from_int(cls, values, params, accelerator=None):
        """A tensor holding these integer codes (checked against the dtype's range)."""
        values = np.ascontiguousarray(as_array(values, "values"), dtype=np.int32)
        return cls(_qforge.pack(values, params.dtype), values.shape, params, accelerator)

    @property
    def dtype(self):
        return self.params.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def accelerator(self):
        return self._accelerator or default_accelerator()

    def int_repr(self):
        """The integer codes as an int32 array of the tensor's shape (unpacked)."""
        return _qforge.unpack(self.data, self.dtype, list(self.shape))

    def dequantize(self):
        """float32 values: (q - z) * s."""
        return self.accelerator.dequantize(self.data, list(self.shape), self.params)

    def numpy(self):
        return self.dequantize()

    def __array__(self, dtype=None, copy=None):
        x = self.dequantize()
        return x if dtype is None else x.astype(dtype)

    def astype(self, target):
        """Another representation of the same values.

        ``numpy.float32`` (or any numpy float type): the dequantized values. A
        ``QuantizationParams``: requantized with them. A ``qforge.DType`` (or its name):
        requantized per tensor with params from the dequantized range, keeping the mapping
        (affine or symmetric) of this tensor's params.
        """
        if isinstance(target, _qforge.QuantizationParams):
            return quantize(self.dequantize(), target, self._accelerator)
        if isinstance(target, (_qforge.DType, str)) and not _is_numpy_float(target):
            dtype = _resolve_dtype(target)
            x = self.dequantize()
            mapping = self.params.mapping
            if mapping == _qforge.Mapping.logarithmic:
                mapping = _qforge.Mapping.symmetric
            lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
            return quantize(x, _qforge.QuantizationParams.from_range(dtype, mapping, lo, hi),
                            self._accelerator)
        if _is_numpy_float(target):
            return self.dequantize().astype(target)
        raise TypeError(f"astype({target!r}): expected a numpy float type, a qforge.DType or "
                        "qforge.QuantizationParams")

    def __matmul__(self, other):
        if isinstance(other, QuantizedTensor):
            return matmul(self, other)
        return self.dequantize() @ as_array(other, "other")

    def __rmatmul__(self, other):
        return as_array(other, "other") @ self.dequantize()

    def __repr__(self):
        return f"QuantizedTensor(shape={list(self.shape)}, params={self.params})"


def _is_numpy_float(target):
    try:
        return np.dtype(target).kind == "f"
    except TypeError:
        return False


def quantize(x, params, accelerator=None):
    """Quantizes float32 (or float16) ``x`` with ``params`` on the accelerator's chosen plugin.

    ``x`` is a numpy array or a DLPack producer in host memory, read in place: it must be
    C-contiguous. Returns a QuantizedTensor.
    """
    x = as_array(x)
    acc = accelerator or default_accelerator()
    return QuantizedTensor(acc.quantize(x, params), x.shape, params, accelerator)


def dequantize(q, params=None, accelerator=None):
    """float32 values of a QuantizedTensor, or of raw storage ``q`` with ``params``."""
    if isinstance(q, QuantizedTensor):
        return q.dequantize() if accelerator is None else accelerator.dequantize(
            q.data, list(q.shape), q.params)
    if params is None:
        raise TypeError("dequantize(q) of a raw array needs params")
    q = as_array(q, "q")
    acc = accelerator or default_accelerator()
    return acc.dequantize(q, list(q.shape), params)


def matmul(a, b, bias=None, transpose_b=False, accelerator=None):
    """Y = dequant(A) @ dequant(B) + bias as qforge's fused matmul_dequant (float32 out).

    A is [M, K] with per-tensor or per-row params; B is [K, N] with per-tensor or per-column
    params, or with ``transpose_b`` [N, K] (nn.Linear's weight layout; block-wise B needs it).
    """
    if not isinstance(a, QuantizedTensor) or not isinstance(b, QuantizedTensor):
        raise TypeError("matmul takes two QuantizedTensors; dequantize() float operands' partners "
                        "or quantize() the float one")
    acc = accelerator or a._accelerator or b._accelerator or default_accelerator()
    if bias is not None:
        bias = as_array(bias, "bias")
    return acc.matmul_dequant(a.data, list(a.shape), a.params, b.data, list(b.shape), b.params,
                              "nk" if transpose_b else "kn", bias)
