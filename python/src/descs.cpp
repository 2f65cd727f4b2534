#include "descs.h"

#include <string>

#include "arrays.h"
#include "qforge/reference.h"

namespace qforge::python {

QuantizeDesc quantize_desc(const py::array& x, const QuantizationParams& params) {
  const FloatType ft = float_type_of(x, "x");
  require_array(x, x.dtype(), "x");
  // Checked here so that params that do not fit the tensor say so, rather than reaching the
  // accelerator as a workload no plugin supports.
  QuantizeDesc desc{shape_of(x), params, ft};
  reference::check_descriptor(OpKind::quantize, desc);
  return desc;
}

MatrixLayout parse_layout(const std::string& text) {
  if (text == "kn") return MatrixLayout::kn;
  if (text == "nk") return MatrixLayout::nk;
  throw py::value_error("b_layout = '" + text + "'; expected 'kn' (B is [K, N]) or 'nk' ([N, K])");
}

MatmulDesc matmul_desc(const py::array& a, const Shape& a_shape, const QuantizationParams& a_params,
                       const py::array& b, const Shape& b_shape, const QuantizationParams& b_params,
                       MatrixLayout b_layout, const std::optional<py::array>& bias) {
  if (a_shape.size() != 2 || b_shape.size() != 2)
    throw py::value_error("matmul takes 2-D operands; got A " + to_string(a_shape) + " and B " +
                          to_string(b_shape));
  const std::int64_t m = a_shape[0], k = a_shape[1];
  const std::int64_t bk = b_layout == MatrixLayout::kn ? b_shape[0] : b_shape[1];
  const std::int64_t n = b_layout == MatrixLayout::kn ? b_shape[1] : b_shape[0];
  if (bk != k)
    throw py::value_error("matmul: A is " + to_string(a_shape) + " and B (" +
                          std::string(to_string(b_layout)) + ") is " + to_string(b_shape) +
                          "; the K extents differ");
  require_storage(a, a_params.dtype(), a_shape, "a");
  require_storage(b, b_params.dtype(), b_shape, "b");
  MatmulDesc d{m, n, k, a_params, b_params, b_layout};
  if (bias) {
    require_array(*bias, py::dtype::of<float>(), "bias");
    if (bias->ndim() != 1 || bias->shape(0) != n)
      throw py::value_error("bias has shape " + to_string(shape_of(*bias)) + "; expected [" +
                            std::to_string(n) + "]");
    d.has_bias = true;
  }
  reference::check_descriptor(OpKind::matmul_dequant, d);
  return d;
}

}  // namespace qforge::python
