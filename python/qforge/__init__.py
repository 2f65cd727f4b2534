"""qforge: neural-network quantization with runtime-loaded backend plugins.

The numpy face of qforge's C++ core (docs/PYTHON.md): dtypes, schemes and QuantizationParams;
quantize/dequantize and QuantizedTensor (with ``@`` as the fused quantized matmul) through the
accelerator; plans; calibration observers; the model layer (quantize_model); hwinfo().
Plugins are found beside the package (an installed wheel), else through QFORGE_PLUGIN_PATH.
"""

from . import _qforge
from ._accel import default_accelerator, set_default_accelerator
from ._errors import (Error, InvalidArgumentError, ResultOverflowError, ShapeMismatchError,
                      UnsupportedError)
from ._model import ModelReport, QuantizedModel, quantize_model
from ._qforge import (Accelerator, DType, Granularity, HistogramObserver, Mapping,
                      MinMaxObserver, MovingAverageMinMaxObserver, Observer, Plan,
                      QuantizationParams, Scheme, hwinfo, parse_dtype)
from ._tensor import QuantizedTensor, dequantize, matmul, quantize

int8 = DType.int8
uint8 = DType.uint8
int16 = DType.int16
uint16 = DType.uint16
int4 = DType.int4
uint4 = DType.uint4
binary = DType.binary

affine = Mapping.affine
symmetric = Mapping.symmetric
logarithmic = Mapping.logarithmic


class reference:
    """core's reference numerics (the oracle every plugin is tested against), on numpy arrays."""

    quantize = staticmethod(_qforge.reference_quantize)
    dequantize = staticmethod(_qforge.reference_dequantize)
    matmul_dequant = staticmethod(_qforge.reference_matmul_dequant)


__all__ = [
    "Accelerator", "DType", "Error", "Granularity", "HistogramObserver", "InvalidArgumentError",
    "Mapping", "MinMaxObserver", "ModelReport", "MovingAverageMinMaxObserver", "Observer", "Plan",
    "QuantizationParams", "QuantizedModel", "QuantizedTensor", "ResultOverflowError", "Scheme",
    "ShapeMismatchError", "UnsupportedError", "affine", "binary", "default_accelerator",
    "dequantize", "hwinfo", "int16", "int4", "int8", "logarithmic", "matmul", "parse_dtype",
    "quantize", "quantize_model", "reference", "set_default_accelerator", "symmetric", "uint16",
    "uint4", "uint8",
]
