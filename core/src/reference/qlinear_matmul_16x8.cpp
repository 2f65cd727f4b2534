// TFLite's 16x8 fully connected (reference_integer_ops::FullyConnected with int16 input and an
// int64 bias) over a MatmulDesc.
#include <algorithm>
#include <cmath>

#include "qforge/reference_16x8.h"
#include "reference/detail.h"

namespace qforge::reference {
namespace {

void require_s16(const std::string& op, const char* which, const QuantizationParams& p) {
  if (p.dtype() != DType::int16 || p.scheme().mapping == Mapping::logarithmic ||
      p.scheme().granularity != Granularity::per_tensor || p.zero_point() != 0)
    detail::fail(ErrorCode::invalid_argument, op,
                 std::string(which) + " params " + p.to_string() +
                     "; expected per-tensor int16 with zero point 0 (TFLite's 16x8 activations)");
}

}  // namespace

void qlinear_matmul_16x8(const MatmulDesc& desc, const void* a, const void* b,
                         const std::int64_t* bias, void* y) {
  const std::string op = "qlinear_matmul_16x8";
  detail::validate_matmul(op, desc, /*allow_block_b=*/false);
  require_s16(op, "A", desc.a);
  if (desc.b.dtype() != DType::int8 || desc.b.scheme().mapping == Mapping::logarithmic ||
      desc.b.min_zero_point() != 0 || desc.b.max_zero_point() != 0)
    detail::fail(ErrorCode::invalid_argument, op,
                 "B params " + desc.b.to_string() +
                     "; expected int8 symmetric (zero point 0), per tensor or per column");
  if (!desc.y)
    detail::fail(ErrorCode::invalid_argument, op,
                 "no output params (desc.y is empty); expected per-tensor int16 with zero point 0");
  require_s16(op, "Y", *desc.y);
  if (desc.requant_mode != RequantMode::fixed_point)
    detail::fail(ErrorCode::invalid_argument, op,
                 "requant_mode " + std::string(to_string(desc.requant_mode)) +
                     "; expected fixed_point (TFLite's 16x8 kernels are integer-only)");
  detail::require_data(op, "a", a, desc.m * desc.k);
  detail::require_data(op, "b", b, desc.n * desc.k);
  detail::require_data(op, "y", y, desc.m * desc.n);
  const float sa = desc.a.scale(), sy = desc.y->scale();
  std::vector<FixedPointMultiplier> multipliers(static_cast<std::size_t>(desc.n));
  for (std::int64_t n = 0; n < desc.n; ++n) {
    const float sb = desc.b.scale(detail::b_pair(desc.b, n, 0, desc.k));
    multipliers[static_cast<std::size_t>(n)] =
        multiplier_16x8(sa, sb, sy, op, "column " + std::to_string(n));
  }
  const detail::CenteredOperands ops = detail::center_operands(desc, a, b);
  constexpr std::int64_t kLimit = std::int64_t{1} << 47;
  for (std::int64_t m = 0; m < desc.m; ++m)
    for (std::int64_t n = 0; n < desc.n; ++n) {
      // |dot| <= 32768 * 127 * K: exact in int64 for any K that fits memory.
      const std::int64_t c = detail::dot(ops, desc.k, m, n, 0, desc.k) + (bias ? bias[n] : 0);
      if (c < -kLimit || c >= kLimit)
        detail::fail(ErrorCode::overflow, op,
                     "accumulator plus bias at (m, n) = (" + std::to_string(m) + ", " +
                         std::to_string(n) + ") = " + std::to_string(c) +
                         "; expected a value in [-2^47, 2^47) (TFLite's 16x8 requantization)");
      const std::int64_t q = std::clamp<std::int64_t>(
          multiply_by_quantized_multiplier_s64(c, multipliers[static_cast<std::size_t>(n)]), -32768,
          32767);
      store_element(DType::int16, y, static_cast<std::size_t>(m * desc.n + n),
                    static_cast<std::int32_t>(q));
    }
}

}  // namespace qforge::reference
