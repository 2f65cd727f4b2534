// TFLite's integer-only requantization (tensorflow/lite/kernels/internal/quantization_util.cc,
// common.h) and the gemmlowp primitives it is built on (gemmlowp/fixedpoint/fixedpoint.h).
// Where TFLite leaves behaviour undefined (a left shift that overflows int32, exponents outside
// [0, 31]), the reference defines it and docs/NUMERICS.md says how.
#include <algorithm>
#include <cmath>
#include <limits>

#include "qforge/reference.h"
#include "qforge/reference_16x8.h"
#include "reference/detail.h"

namespace qforge::reference {
namespace {

constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

}  // namespace

FixedPointMultiplier quantize_multiplier(double real_multiplier) {
  if (!std::isfinite(real_multiplier))
    detail::fail(
        ErrorCode::invalid_argument, "quantize_multiplier",
        "real multiplier = " + std::to_string(real_multiplier) + "; expected a finite value");
  if (real_multiplier == 0.0) return {0, 0};
  int shift = 0;
  const double q = std::frexp(real_multiplier, &shift);  // |q| in [0.5, 1)
  // TfLiteRound is std::round: half away from zero.
  auto q_fixed = static_cast<std::int64_t>(std::round(q * static_cast<double>(1LL << 31)));
  if (q_fixed == (1LL << 31) || q_fixed == -(1LL << 31)) {  // q rounded up to 1.0
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) return {0, 0};  // every bit would be shifted out: TFLite flushes to zero
  if (shift > 31)
    detail::fail(ErrorCode::invalid_argument, "quantize_multiplier",
                 "real multiplier = " + std::to_string(real_multiplier) +
                     " needs a left shift of " + std::to_string(shift) +
                     "; expected |multiplier| < 2^31");
  return {static_cast<std::int32_t>(q_fixed), shift};
}

std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) noexcept {
  // The one product that does not fit: (-1) * (-1) in Q0.31.
  if (a == b && a == kInt32Min) return static_cast<std::int32_t>(kInt32Max);
  const std::int64_t ab = static_cast<std::int64_t>(a) * static_cast<std::int64_t>(b);
  const std::int64_t nudge = ab >= 0 ? (1LL << 30) : (1LL - (1LL << 30));
  return static_cast<std::int32_t>((ab + nudge) / (1LL << 31));  // division truncates toward 0
}

std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) noexcept {
  // gemmlowp asserts exponent in [0, 31]; larger ones are computed the same way in 64 bits
  // (round half away from zero), negative ones are treated as 0.
  if (exponent <= 0) return x;
  if (exponent > 62) exponent = 62;
  const std::int64_t v = x;
  const std::int64_t mask = (1LL << exponent) - 1;
  const std::int64_t remainder = v & mask;
  const std::int64_t threshold = (mask >> 1) + (v < 0 ? 1 : 0);
  return static_cast<std::int32_t>((v >> exponent) + (remainder > threshold ? 1 : 0));
}

std::int32_t multiply_by_quantized_multiplier(std::int32_t x, FixedPointMultiplier m) noexcept {
  // quantize_multiplier never produces shifts outside [-31, 31]; hand-made ones are clamped to
  // where the result no longer changes (any nonzero x * 2^32 saturates; 2^-63 rounds to 0).
  const int shift = std::clamp(m.shift, -63, 32);
  const int left_shift = shift > 0 ? shift : 0;
  const int right_shift = shift > 0 ? 0 : -shift;
  // TFLite computes x * (1 << left_shift) in int32, which is undefined on overflow; the
  // reference saturates it (left_shift <= 31, so the 64-bit product is exact).
  const std::int64_t shifted = static_cast<std::int64_t>(x) * (1LL << left_shift);
  const auto sat = static_cast<std::int32_t>(std::clamp(shifted, kInt32Min, kInt32Max));
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(sat, m.multiplier),
                                right_shift);
}

std::int64_t multiply_by_quantized_multiplier_s64(std::int64_t x, FixedPointMultiplier m) {
  const std::string op = "multiply_by_quantized_multiplier_s64";
  constexpr std::int64_t kLimit = 1LL << 47;
  if (x < -kLimit || x >= kLimit)
    detail::fail(ErrorCode::overflow, op,
                 "x = " + std::to_string(x) + "; expected -2^47 <= x < 2^47 (TFLite's bound)");
  if (m.multiplier < 0 || m.shift < -31 || m.shift > 7)
    detail::fail(ErrorCode::invalid_argument, op,
                 "multiplier " + std::to_string(m.multiplier) + " with shift " +
                     std::to_string(m.shift) +
                     "; expected a multiplier >= 0 and a shift in [-31, 7] (a real multiplier "
                     "below 2^7)");
  // The Q31 multiplier rounded to Q15 (half up, saturating at 0x7FFF), then one rounding of the
  // 64-bit product: half up, toward +infinity, as the added 2^(total - 1) and the floor give.
  const std::int64_t reduced =
      m.multiplier < 0x7FFF0000 ? (std::int64_t{m.multiplier} + (1 << 15)) >> 16 : 0x7FFF;
  const int total_shift = 15 - m.shift;  // in [8, 46]
  // |x * reduced| < 2^62: exact; >> of a negative value floors (C++20).
  return (x * reduced + (std::int64_t{1} << (total_shift - 1))) >> total_shift;
}

FixedPointMultiplier multiplier_16x8(float sx, float sw, float sy, const std::string& op,
                                     const std::string& position) {
  const double real = static_cast<double>(sx) * static_cast<double>(sw) / static_cast<double>(sy);
  // A value just below 2^7 can round up to a Q31 multiplier of 2^7 (shift 8): check the shift.
  const FixedPointMultiplier m =
      std::isfinite(real) && real < 128.0 ? quantize_multiplier(real) : FixedPointMultiplier{0, 8};
  if (m.shift > 7)
    detail::fail(ErrorCode::invalid_argument, op,
                 "multiplier (sx * sw) / sy = " + std::to_string(real) + " for " + position +
                     "; expected a finite multiplier below 2^7 (the shift range of TFLite's "
                     "16x8 requantization)");
  return m;
}

}  // namespace qforge::reference
