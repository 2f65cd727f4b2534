// ONNX DynamicQuantizeLinear (uint8), evaluated in float32 exactly as the ONNX reference and
// ONNX Runtime do:
//   max = max(0, max x), min = min(0, min x)
//   s = (max - min) / 255            (s = 1 when max == min, as ONNX Runtime)
//   z = sat(rne(0 - min / s))
//   y = sat(rne(x / s) + z)
// NaN elements do not take part in the range and quantize to z; +/-inf make the range
// meaningless (s = inf) and throw.
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {

void detail::validate_dynamic_quantize(const std::string& op, const DynamicQuantizeDesc& desc) {
  checked_operand(op, "x", desc.shape, sizeof(float));
}

QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& desc, const float* x,
                                           std::uint8_t* y) {
  const std::string op = "dynamic_quantize_linear";
  detail::validate_dynamic_quantize(op, desc);
  const std::int64_t n = element_count(desc.shape);
  detail::require_data(op, "x", x, n);
  detail::require_data(op, "y", y, n);
  float lo = 0.0f, hi = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (std::isinf(v))
      detail::fail(ErrorCode::invalid_argument, op,
                   "x[" + std::to_string(i) + "] = " + detail::float_text(v) +
                       "; expected finite values (an infinite range has no uint8 scale)");
    if (std::isnan(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  // params_from_range evaluates exactly the expressions above in float32; it also keeps s > 0
  // and finite where ONNX leaves it undefined (a range wider than FLT_MAX or one so narrow that
  // s underflows to 0).
  const QuantizationParams p = params_from_range(DType::uint8, Mapping::affine, lo, hi);
  const auto& tr = traits(DType::uint8);
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = static_cast<std::uint8_t>(
        quantize_value(x[i], p.scale(), p.zero_point(), tr.qmin, tr.qmax));
  return p;
}

}  // namespace qforge::reference
