// Dtypes, schemes and QuantizationParams, as core has them (params.h, scheme.h, dtype.h).
#include "qforge/params.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "arrays.h"
#include "bindings.h"
#include "qforge/dtype.h"
#include "qforge/reference.h"
#include "qforge/scheme.h"

namespace py = pybind11;

namespace qforge::python {

namespace {

template <class T>
py::array copy_of(std::span<const T> values) {
  py::array out = new_array(py::dtype::of<T>(), Shape{static_cast<std::int64_t>(values.size())});
  std::copy(values.begin(), values.end(), static_cast<T*>(out.mutable_data()));
  return out;
}

}  // namespace

void bind_params(py::module_& m) {
  py::enum_<DType>(m, "DType", "Quantized element types (dtype.h)")
      .value("int8", DType::int8)
      .value("uint8", DType::uint8)
      .value("int16", DType::int16)
      .value("uint16", DType::uint16)
      .value("int4", DType::int4)
      .value("uint4", DType::uint4)
      .value("binary", DType::binary)
      .def_property_readonly("bits", [](DType t) { return traits(t).bits; })
      .def_property_readonly("is_signed", [](DType t) { return traits(t).is_signed; })
      .def_property_readonly("qmin", [](DType t) { return traits(t).qmin; })
      .def_property_readonly("qmax", [](DType t) { return traits(t).qmax; })
      .def_property_readonly("narrow_qmin", [](DType t) { return traits(t).narrow_qmin; })
      .def_property_readonly("narrow_qmax", [](DType t) { return traits(t).narrow_qmax; })
      .def_property_readonly("storage_dtype", &storage_dtype,
                             "numpy dtype of the stored elements (uint8 bytes when packed)")
      .def(
          "storage_bytes", [](DType t, std::size_t n) { return storage_bytes(t, n); },
          "Bytes that n elements occupy");
  m.def(
      "parse_dtype",
      [](const std::string& text) {
        if (auto d = parse_dtype(text)) return *d;
        throw py::value_error("unknown dtype '" + text +
                              "'; expected int8, uint8, int16, uint16, int4, uint4 or binary");
      },
      py::arg("text"));

  py::enum_<Mapping>(m, "Mapping")
      .value("affine", Mapping::affine)
      .value("symmetric", Mapping::symmetric)
      .value("logarithmic", Mapping::logarithmic);
  py::enum_<Granularity>(m, "Granularity")
      .value("per_tensor", Granularity::per_tensor)
      .value("per_channel", Granularity::per_channel)
      .value("block", Granularity::block);

  py::class_<Scheme>(m, "Scheme", "Mapping x granularity (scheme.h)")
      .def(
          py::init([](Mapping mapping, Granularity granularity, int axis, std::int64_t block_size) {
            return Scheme{mapping, granularity, axis, block_size};
          }),
          py::arg("mapping") = Mapping::affine, py::arg("granularity") = Granularity::per_tensor,
          py::arg("axis") = 0, py::arg("block_size") = kDefaultBlockSize)
      .def_readonly("mapping", &Scheme::mapping)
      .def_readonly("granularity", &Scheme::granularity)
      .def_readonly("axis", &Scheme::axis)
      .def_readonly("block_size", &Scheme::block_size)
      .def("__eq__", [](const Scheme& a, const Scheme& b) { return a == b; })
      .def("__hash__", [](const Scheme& s) { return py::hash(py::str(to_string(s))); })
      .def("__repr__", [](const Scheme& s) { return "Scheme(" + to_string(s) + ")"; })
      .def("__str__", [](const Scheme& s) { return to_string(s); });

  py::class_<QuantizationParams>(m, "QuantizationParams",
                                 "Validated (dtype, scheme, scales, zero points) (params.h)")
      .def(py::init([](DType dtype, const Scheme& scheme, std::vector<float> scales,
                       std::vector<std::int32_t> zero_points) {
             return QuantizationParams(dtype, scheme, std::move(scales), std::move(zero_points));
           }),
           py::arg("dtype"), py::arg("scheme"), py::arg("scales"),
           py::arg("zero_points") = std::vector<std::int32_t>{})
      .def_static("per_tensor_affine", &QuantizationParams::per_tensor_affine, py::arg("dtype"),
                  py::arg("scale"), py::arg("zero_point"))
      .def_static("per_tensor_symmetric", &QuantizationParams::per_tensor_symmetric,
                  py::arg("dtype"), py::arg("scale"))
      .def_static("per_channel", &QuantizationParams::per_channel, py::arg("dtype"),
                  py::arg("mapping"), py::arg("axis"), py::arg("scales"),
                  py::arg("zero_points") = std::vector<std::int32_t>{})
      .def_static("blockwise", &QuantizationParams::blockwise, py::arg("dtype"), py::arg("mapping"),
                  py::arg("block_size"), py::arg("scales"),
                  py::arg("zero_points") = std::vector<std::int32_t>{})
      .def_static("logarithmic", &QuantizationParams::logarithmic, py::arg("dtype"),
                  py::arg("scale"))
      .def_static(
          "from_range",
          [](DType dtype, Mapping mapping, float lo, float hi) {
            return reference::params_from_range(dtype, mapping, lo, hi);
          },
          py::arg("dtype"), py::arg("mapping"), py::arg("lo"), py::arg("hi"),
          "Per-tensor params for an observed range [lo, hi] (DESIGN.md's rule)")
      .def_property_readonly("dtype", &QuantizationParams::dtype)
      .def_property_readonly("scheme", &QuantizationParams::scheme)
      .def_property_readonly("mapping",
                             [](const QuantizationParams& p) { return p.scheme().mapping; })
      .def_property_readonly("granularity",
                             [](const QuantizationParams& p) { return p.scheme().granularity; })
      .def_property_readonly("scales",
                             [](const QuantizationParams& p) { return copy_of<float>(p.scales()); })
      .def_property_readonly(
          "zero_points",
          [](const QuantizationParams& p) { return copy_of<std::int32_t>(p.zero_points()); })
      .def_property_readonly("count", &QuantizationParams::count)
      .def_property_readonly("qmin", &QuantizationParams::qmin)
      .def_property_readonly("qmax", &QuantizationParams::qmax)
      .def(
          "validate_for", [](const QuantizationParams& p, const Shape& s) { p.validate_for(s); },
          py::arg("shape"), "Raises unless these params fit a tensor of this shape")
      .def("__eq__",
           [](const QuantizationParams& a, const QuantizationParams& b) { return a == b; })
      .def("__repr__",
           [](const QuantizationParams& p) { return "QuantizationParams(" + p.to_string() + ")"; })
      .def("__str__", &QuantizationParams::to_string);
}

}  // namespace qforge::python
