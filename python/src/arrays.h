// numpy arrays at the boundary: what the bindings accept and how they are checked. Inputs are
// read in place (zero copy) and must therefore already be what the C++ side reads: the exact
// element type, C-contiguous and aligned. Anything else is a TypeError (wrong type) or a
// ValueError (layout, shape), never a silent copy and never a crash.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "qforge/dtype.h"
#include "qforge/half.h"
#include "qforge/shape.h"

namespace qforge::python {

namespace py = pybind11;

// pybind11 2.10 (Debian 12) reads numpy's dtype struct with numpy 1.x's layout, which numpy 2
// changed: dtype.itemsize() and array.nbytes() read the wrong field, and py::array(dtype, shape)
// computes its strides from it. These go through numpy's Python attributes instead.
py::ssize_t itemsize(const py::dtype& d);
py::ssize_t nbytes(const py::array& a);
// A new C-contiguous array of `shape` with elements of `d`.
py::array new_array(const py::dtype& d, const Shape& shape);

// The array's shape as qforge's Shape.
Shape shape_of(const py::array& a);

// Throws TypeError unless `a` holds elements of `dtype`; ValueError unless it is C-contiguous
// and aligned. `what` names the argument in messages ("x", "q").
void require_array(const py::array& a, const py::dtype& dtype, std::string_view what);
// The same for an output: also writeable.
void require_output(const py::array& a, const py::dtype& dtype, std::string_view what);

// The float types qforge reads: float32 and float16 (FloatType). TypeError for any other.
FloatType float_type_of(const py::array& a, std::string_view what);

// The numpy dtype that holds one stored element of `t` (int8, uint8, int16, uint16); packed
// dtypes (int4, uint4, binary) are stored as uint8 bytes.
py::dtype storage_dtype(DType t);
// The storage array of a quantized tensor of `shape`: the shape itself for 8- and 16-bit
// dtypes, [storage_bytes] uint8 for packed ones.
py::array storage_array(DType t, const Shape& shape);
// Checks that `q` is the storage of a quantized tensor of `shape` in dtype `t` (as
// storage_array makes it): element type and layout as require_array, and its byte count.
void require_storage(const py::array& q, DType t, const Shape& shape, std::string_view what);

// A new float32 array of `shape`.
py::array_t<float> float_array(const Shape& shape);

}  // namespace qforge::python
