// The reference numerics (core's oracle) on numpy arrays, and the element view of packed
// storage. The package's quantize()/dequantize() run through the accelerator
// (accelerator.cpp); these are what tests and users compare against.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "arrays.h"
#include "bindings.h"
#include "descs.h"
#include "qforge/dtype.h"
#include "qforge/reference.h"

namespace py = pybind11;

namespace qforge::python {

void bind_ops(py::module_& m) {
  m.def(
      "reference_quantize",
      [](const py::array& x, const QuantizationParams& params) {
        const QuantizeDesc desc = quantize_desc(x, params);
        py::array q = storage_array(params.dtype(), desc.shape);
        reference::quantize(desc, x.data(), q.mutable_data());
        return q;
      },
      py::arg("x"), py::arg("params"),
      "core's reference quantize: the storage of x quantized with params");
  m.def(
      "reference_dequantize",
      [](const py::array& q, const Shape& shape, const QuantizationParams& params) {
        require_storage(q, params.dtype(), shape, "q");
        const QuantizeDesc desc{shape, params};
        py::array_t<float> x = float_array(shape);
        reference::dequantize(desc, q.data(), x.mutable_data());
        return x;
      },
      py::arg("q"), py::arg("shape"), py::arg("params"),
      "core's reference dequantize of the storage q of a tensor of this shape");
  m.def(
      "reference_matmul_dequant",
      [](const py::array& a, const Shape& a_shape, const QuantizationParams& a_params,
         const py::array& b, const Shape& b_shape, const QuantizationParams& b_params,
         const std::string& b_layout, const std::optional<py::array>& bias) {
        const MatmulDesc d =
            matmul_desc(a, a_shape, a_params, b, b_shape, b_params, parse_layout(b_layout), bias);
        py::array_t<float> y = float_array({d.m, d.n});
        reference::matmul_dequant(d, a.data(), b.data(),
                                  bias ? static_cast<const float*>(bias->data()) : nullptr,
                                  y.mutable_data());
        return y;
      },
      py::arg("a"), py::arg("a_shape"), py::arg("a_params"), py::arg("b"), py::arg("b_shape"),
      py::arg("b_params"), py::arg("b_layout") = "kn", py::arg("bias") = py::none());
  m.def(
      "unpack",
      [](const py::array& q, DType dtype, const Shape& shape) {
        require_storage(q, dtype, shape, "q");
        const auto n = element_count(shape);
        py::array_t<std::int32_t> out(std::vector<py::ssize_t>(shape.begin(), shape.end()));
        std::int32_t* o = out.mutable_data();
        for (std::int64_t i = 0; i < n; ++i)
          o[i] = load_element(dtype, q.data(), static_cast<std::size_t>(i));
        return out;
      },
      py::arg("q"), py::arg("dtype"), py::arg("shape"),
      "The integer values of packed or plain storage, as int32 of the tensor's shape");
  m.def(
      "pack",
      [](const py::array& values, DType dtype) {
        require_array(values, py::dtype::of<std::int32_t>(), "values");
        const Shape shape = shape_of(values);
        const auto n = element_count(shape);
        const auto& tr = traits(dtype);
        const std::int32_t* v = static_cast<const std::int32_t*>(values.data());
        for (std::int64_t i = 0; i < n; ++i)
          if (v[i] < tr.qmin || v[i] > tr.qmax)
            throw py::value_error("values[" + std::to_string(i) + "] = " + std::to_string(v[i]) +
                                  " is outside " + std::string(tr.name) + "'s range [" +
                                  std::to_string(tr.qmin) + ", " + std::to_string(tr.qmax) + "]");
        py::array q = storage_array(dtype, shape);
        for (std::int64_t i = 0; i < n; ++i)
          store_element(dtype, q.mutable_data(), static_cast<std::size_t>(i), v[i]);
        return q;
      },
      py::arg("values"), py::arg("dtype"),
      "Storage of int32 values in dtype (packed when < 8 bits)");
}

}  // namespace qforge::python
