// Op descriptors built from numpy arrays, with the checks shared by the reference functions
// and the accelerator's (ops.cpp, accelerator.cpp).
#pragma once

#include <pybind11/numpy.h>

#include <optional>

#include "qforge/op_desc.h"
#include "qforge/params.h"

namespace qforge::python {

namespace py = pybind11;

// quantize: x (float32 or float16) read in place; the descriptor of its shape with `params`.
QuantizeDesc quantize_desc(const py::array& x, const QuantizationParams& params);

// matmul_dequant: A [M, K] stored as `a` with `a_params`, B [K, N] (kn) or [N, K] (nk) stored as
// `b` with `b_params`, optional float32 bias [N]. Checks every array against the descriptor.
MatmulDesc matmul_desc(const py::array& a, const Shape& a_shape, const QuantizationParams& a_params,
                       const py::array& b, const Shape& b_shape, const QuantizationParams& b_params,
                       MatrixLayout b_layout, const std::optional<py::array>& bias);

MatrixLayout parse_layout(const std::string& text);

}  // namespace qforge::python
