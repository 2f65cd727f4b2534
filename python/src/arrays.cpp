#include "arrays.h"

#include <algorithm>
#include <string>
#include <vector>

#include "qforge/checked_size.h"

namespace qforge::python {

namespace {

std::string dtype_name(const py::dtype& d) {
  return py::str(static_cast<const py::handle&>(d)).cast<std::string>();
}

std::string shape_text(const py::array& a) { return to_string(shape_of(a)); }

}  // namespace

py::ssize_t itemsize(const py::dtype& d) { return d.attr("itemsize").cast<py::ssize_t>(); }

py::ssize_t nbytes(const py::array& a) { return a.size() * itemsize(a.dtype()); }

py::array new_array(const py::dtype& d, const Shape& shape) {
  std::vector<py::ssize_t> extents(shape.begin(), shape.end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = itemsize(d);
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<py::ssize_t>(extents[i], 1);
  }
  return py::array(d, std::move(extents), std::move(strides));
}

Shape shape_of(const py::array& a) {
  Shape s(static_cast<std::size_t>(a.ndim()));
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s[static_cast<std::size_t>(i)] = a.shape(i);
  return s;
}

void require_array(const py::array& a, const py::dtype& dtype, std::string_view what) {
  if (!a.dtype().is(dtype) && !a.dtype().equal(dtype))
    throw py::type_error(std::string(what) + " has dtype " + dtype_name(a.dtype()) + "; expected " +
                         dtype_name(dtype));
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(std::string(what) + " of shape " + shape_text(a) +
                          " is not C-contiguous; qforge reads arrays in place: pass "
                          "numpy.ascontiguousarray(" +
                          std::string(what) + ")");
  if (!(a.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
    throw py::value_error(std::string(what) + " is not aligned to its element size; pass a copy (" +
                          std::string(what) + ".copy())");
}

void require_output(const py::array& a, const py::dtype& dtype, std::string_view what) {
  require_array(a, dtype, what);
  if (!a.writeable())
    throw py::value_error(std::string(what) + " is read-only; expected a writeable array");
}

FloatType float_type_of(const py::array& a, std::string_view what) {
  if (a.dtype().equal(py::dtype::of<float>())) return FloatType::f32;
  if (a.dtype().equal(py::dtype("float16"))) return FloatType::f16;
  throw py::type_error(std::string(what) + " has dtype " + dtype_name(a.dtype()) +
                       "; expected float32 or float16 (convert with " + std::string(what) +
                       ".astype(numpy.float32))");
}

py::dtype storage_dtype(DType t) {
  switch (t) {
    case DType::int8: return py::dtype::of<std::int8_t>();
    case DType::int16: return py::dtype::of<std::int16_t>();
    case DType::uint16: return py::dtype::of<std::uint16_t>();
    default: return py::dtype::of<std::uint8_t>();
  }
}

namespace {

bool packed(DType t) { return traits(t).bits < 8; }

}  // namespace

py::array storage_array(DType t, const Shape& shape) {
  const std::int64_t n = element_count(shape);
  if (packed(t)) {
    const auto bytes = static_cast<py::ssize_t>(storage_bytes(t, static_cast<std::size_t>(n)));
    py::array out = new_array(storage_dtype(t), Shape{bytes});
    std::fill_n(static_cast<std::uint8_t*>(out.mutable_data()), bytes, std::uint8_t{0});
    return out;
  }
  return new_array(storage_dtype(t), shape);
}

void require_storage(const py::array& q, DType t, const Shape& shape, std::string_view what) {
  require_array(q, storage_dtype(t), what);
  const std::int64_t n = element_count(shape);
  const auto bytes = storage_bytes(t, static_cast<std::size_t>(n));
  if (static_cast<std::size_t>(nbytes(q)) != bytes)
    throw py::value_error(std::string(what) + " holds " + std::to_string(nbytes(q)) + " bytes; a " +
                          std::string(name(t)) + " tensor of shape " + to_string(shape) +
                          " needs " + std::to_string(bytes));
}

py::array_t<float> float_array(const Shape& shape) {
  return py::array_t<float>(std::vector<py::ssize_t>(shape.begin(), shape.end()));
}

}  // namespace qforge::python
