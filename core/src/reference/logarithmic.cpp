// Logarithmic (power-of-two) quantization.
//
// Encoding (docs/NUMERICS.md): code 0 is 0.0; code +/-(k + 1) is +/-s * 2^-k for k in
// [0, qmax - 1]. Unsigned dtypes carry only the non-negative codes. Rounding is to the nearest
// power of two in the log domain (Miyashita, Lee, Murmann 2016, "Convolutional Neural Networks
// using Logarithmic Data Representation"): a = |x| / s goes to 2^round(log2 a), decided exactly
// with frexp instead of a rounded log2().
#include <algorithm>
#include <cstdlib>

#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {
namespace {

// The largest float below sqrt(2). sqrt(2) is irrational, so no float equals it and
// "2m > this" is exactly "log2(2m) > 1/2": no ties exist in the log domain.
constexpr float kBelowSqrt2 = 0x1.6a09e6p+0f;

}  // namespace

std::int32_t quantize_log_value(float x, float scale, DType dtype) noexcept {
  const auto& tr = traits(dtype);
  const std::int32_t kmax = tr.qmax - 1;
  if (std::isnan(x)) return 0;
  if (x < 0.0f && !tr.is_signed) return 0;  // no negative codes: the nearest value is 0
  const float a = std::fabs(x) / scale;
  if (a == 0.0f) return 0;
  std::int32_t k = 0;  // +inf (and anything >= s * sqrt(2)) saturates to k = 0, the largest
  if (std::isfinite(a)) {
    int e = 0;
    const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1); exact, also for subnormals
    int p = e - 1;                      // a = (2m) * 2^p, 2m in [1, 2)
    if (2.0f * m > kBelowSqrt2) ++p;    // log2(2m) > 1/2: round up to the next power
    k = p >= 0 ? 0 : -p;
    if (k > kmax) return 0;  // below the smallest magnitude s * 2^-kmax: underflow to 0
  }
  const std::int32_t code = k + 1;
  return x < 0.0f ? -code : code;
}

float dequantize_log_value(std::int32_t q, float scale) noexcept {
  if (q == 0) return 0.0f;
  // In 64 bits so that no int32 code overflows; beyond k = 400 every float scale underflows.
  const std::int64_t k = std::min<std::int64_t>(std::llabs(static_cast<std::int64_t>(q)) - 1, 400);
  const float mag = std::ldexp(scale, -static_cast<int>(k));  // exact unless subnormal
  return q < 0 ? -mag : mag;
}

}  // namespace qforge::reference
