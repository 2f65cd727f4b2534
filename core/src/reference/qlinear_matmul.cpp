// ONNX QLinearMatMul: y = sat(rne(float(C) * ((sa * sb) / sy)) + zy), or TFLite's fixed-point
// requantization of the same multiplier; with TFLite's int32 bias (at scale sa * sb[n]) added to
// C first and a fused activation as a clamp of the codes.
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {

void qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) {
  qlinear_matmul(desc, a, b, nullptr, y);
}

void qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, const std::int32_t* bias,
                    void* y) {
  const std::string op = "qlinear_matmul";
  detail::validate_matmul(op, desc, /*allow_block_b=*/false);
  detail::validate_qlinear_output(op, desc);
  const QuantizationParams& yp = *desc.y;
  // validate_matmul bounded every operand (checked_size.h): these products are exact.
  detail::require_data(op, "a", a, desc.m * desc.k);
  detail::require_data(op, "b", b, desc.n * desc.k);
  detail::require_data(op, "y", y, desc.m * desc.n);
  if (desc.has_bias) detail::require_data(op, "bias (has_bias is set)", bias, desc.n);
  const auto clamp = detail::qlinear_matmul_clamp(desc);
  const std::int32_t lo = clamp.first, hi = clamp.second;
  const detail::CenteredOperands ops = detail::center_operands(desc, a, b);
  const float sy = yp.scale();
  for (std::int64_t m = 0; m < desc.m; ++m) {
    const float sa = desc.a.scale(detail::a_pair(desc.a, m));
    for (std::int64_t n = 0; n < desc.n; ++n) {
      const float sb = desc.b.scale(detail::b_pair(desc.b, n, 0, desc.k));
      const float multiplier = (sa * sb) / sy;  // float32, in this order
      if (!std::isfinite(multiplier))
        detail::fail(ErrorCode::invalid_argument, op,
                     "multiplier (sa * sb) / sy = (" + detail::float_text(sa) + " * " +
                         detail::float_text(sb) + ") / " + detail::float_text(sy) +
                         " is not finite at (" + std::to_string(m) + ", " + std::to_string(n) +
                         "); expected scales whose ratio fits float32");
      const std::int64_t b_n = desc.has_bias ? bias[n] : 0;
      const std::int32_t c =
          detail::checked_int32(op, detail::dot(ops, desc.k, m, n, 0, desc.k) + b_n, m, n,
                                desc.has_bias ? " + bias[n]" : "");
      std::int32_t q =
          requantize_value(c, multiplier, desc.requant_mode, yp.zero_point(), yp.qmin(), yp.qmax());
      q = q < lo ? lo : q > hi ? hi : q;
      store_element(yp.dtype(), y, static_cast<std::size_t>(m * desc.n + n), q);
    }
  }
}

}  // namespace qforge::reference
