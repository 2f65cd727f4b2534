// TFLite fixed-point requantization: QuantizeMultiplier, SaturatingRoundingDoublingHighMul,
// RoundingDivideByPOT and MultiplyByQuantizedMultiplier on hand-checked values, and the
// property that the fixed-point and float32 modes differ by at most 1.
#include <cmath>
#include <limits>

#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

using namespace reference;
constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();

void expect_multiplier(double real, std::int32_t multiplier, int shift) {
  const auto m = quantize_multiplier(real);
  EXPECT_EQ(m.multiplier, multiplier) << real;
  EXPECT_EQ(m.shift, shift) << real;
}

TEST(FixedPoint, QuantizeMultiplier) {
  expect_multiplier(0.0, 0, 0);
  expect_multiplier(0.5, 1 << 30, 0);
  expect_multiplier(1.0, 1 << 30, 1);
  expect_multiplier(0.25, 1 << 30, -1);
  expect_multiplier(0.75, 1610612736, 0);  // 0.75 * 2^31
  expect_multiplier(0.1, 1717986918, -3);  // 0.8 * 2^31 = 1717986918.4 -> rounds down
  expect_multiplier(3.0, 1610612736, 2);   // 0.75 * 2^2
  expect_multiplier(1.0 - std::ldexp(1.0, -40), 1 << 30, 1);  // q rounds to 1.0: halved, shift + 1
  expect_multiplier(std::ldexp(1.0, -32), 1 << 30, -31);      // smallest kept
  expect_multiplier(std::ldexp(1.0, -33), 0, 0);              // shift < -31 flushes to zero
  expect_multiplier(-0.5, -(1 << 30), 0);
  // Rounding of q * 2^31 is half away from zero (TfLiteRound): 0.5 + 2^-32 has q * 2^31 =
  // 2^30 + 0.5.
  expect_multiplier(0.5 + std::ldexp(1.0, -32), (1 << 30) + 1, 0);
  EXPECT_QFORGE_ERROR(quantize_multiplier(std::nan("")), ErrorCode::invalid_argument,
                      "expected a finite value");
  EXPECT_QFORGE_ERROR(quantize_multiplier(std::ldexp(1.0, 31)), ErrorCode::invalid_argument,
                      "left shift of 32");
}

TEST(FixedPoint, SaturatingRoundingDoublingHighMul) {
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMin, kMin), kMax);  // the one saturating case
  EXPECT_EQ(saturating_rounding_doubling_high_mul(1 << 30, 1 << 30), 1 << 29);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(100, 1 << 30), 50);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(101, 1 << 30), 51);    // 50.5 -> 51
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-101, 1 << 30), -50);  // -50.5 -> -50 (ties up)
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-103, 1 << 30), -51);  // -51.5 -> -51
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-102, 1 << 30), -51);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMax, kMax), kMax - 1);  // (2^31-1)^2/2^31
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMin, kMax), -kMax);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(0, kMin), 0);
}

TEST(FixedPoint, RoundingDivideByPOT) {
  EXPECT_EQ(rounding_divide_by_pot(5, 1), 3);    // 2.5 -> 3 (away from zero)
  EXPECT_EQ(rounding_divide_by_pot(-5, 1), -3);  // -2.5 -> -3
  EXPECT_EQ(rounding_divide_by_pot(4, 1), 2);
  EXPECT_EQ(rounding_divide_by_pot(7, 2), 2);    // 1.75
  EXPECT_EQ(rounding_divide_by_pot(-6, 2), -2);  // -1.5
  EXPECT_EQ(rounding_divide_by_pot(-5, 2), -1);  // -1.25
  EXPECT_EQ(rounding_divide_by_pot(123, 0), 123);
  EXPECT_EQ(rounding_divide_by_pot(kMin, 31), -1);
  EXPECT_EQ(rounding_divide_by_pot(kMax, 31), 1);
  EXPECT_EQ(rounding_divide_by_pot(kMin, 40), 0);  // beyond gemmlowp's range: same rule
  EXPECT_EQ(rounding_divide_by_pot(kMax, 32), 0);  // 0.49999...
}

TEST(FixedPoint, MultiplyByQuantizedMultiplier) {
  const auto half = quantize_multiplier(0.5);
  EXPECT_EQ(multiply_by_quantized_multiplier(100, half), 50);
  EXPECT_EQ(multiply_by_quantized_multiplier(3, half), 2);       // 1.5 -> 2
  EXPECT_EQ(multiply_by_quantized_multiplier(-3, half), -1);     // -1.5 -> -1 (SRDHM ties up)
  const auto quarter = quantize_multiplier(0.25);                // 2^30, shift -1
  EXPECT_EQ(multiply_by_quantized_multiplier(3, quarter), 1);    // SRDHM 2, then 2 / 2 = 1
  EXPECT_EQ(multiply_by_quantized_multiplier(6, quarter), 2);    // SRDHM 3, then 1.5 -> 2
  EXPECT_EQ(multiply_by_quantized_multiplier(-6, quarter), -2);  // SRDHM -3, then -1.5 -> -2
  const auto three = quantize_multiplier(3.0);                   // 0.75 * 2^31, shift 2
  EXPECT_EQ(multiply_by_quantized_multiplier(7, three), 21);
  // Left shift overflow saturates: 2^30 * 2^3 does not fit int32.
  EXPECT_EQ(multiply_by_quantized_multiplier(1 << 30, quantize_multiplier(4.0)), 1 << 30);
  EXPECT_EQ(multiply_by_quantized_multiplier(kMin, quantize_multiplier(4.0)), -(1 << 30));
  EXPECT_EQ(multiply_by_quantized_multiplier(12345, quantize_multiplier(0.0)), 0);
  // Hand-made multipliers with shifts quantize_multiplier never produces stay defined.
  EXPECT_EQ(multiply_by_quantized_multiplier(3, FixedPointMultiplier{1 << 30, 40}), 1 << 30);
  EXPECT_EQ(multiply_by_quantized_multiplier(-3, FixedPointMultiplier{1 << 30, 1000}), -(1 << 30));
  EXPECT_EQ(multiply_by_quantized_multiplier(kMax, FixedPointMultiplier{1 << 30, kMin}), 0);
  // 0.0066 * 0.00705 / 0.0107 applied to 1000: 4.3486 -> 4
  EXPECT_EQ(multiply_by_quantized_multiplier(1000, quantize_multiplier(0.0066 * 0.00705 / 0.0107)),
            4);
}

TEST(FixedPoint, RequantizeValueModesAgreeWithinOne) {
  QFORGE_SEEDED_RNG(rng);
  for (int i = 0; i < 200000; ++i) {
    const auto c = static_cast<std::int32_t>(test::uniform_int(rng, -(1 << 20), 1 << 20));
    const float m = std::ldexp(test::uniform(rng, 0.5f, 1.0f),
                               static_cast<int>(test::uniform_int(rng, -24, 0)));
    const auto f = requantize_value(c, m, RequantMode::float_multiplier, 0, kMin, kMax);
    const auto x = requantize_value(c, m, RequantMode::fixed_point, 0, kMin, kMax);
    ASSERT_LE(std::abs(f - x), 1) << "c=" << c << " m=" << m;
    // And the float mode is the rne of the float32 product.
    ASSERT_EQ(f, static_cast<std::int32_t>(std::nearbyint(static_cast<float>(c) * m))) << c;
  }
}

TEST(FixedPoint, RequantizeValueSaturatesAndValidates) {
  EXPECT_EQ(requantize_value(1000, 0.5f, RequantMode::float_multiplier, 10, -128, 127), 127);
  EXPECT_EQ(requantize_value(-1000, 0.5f, RequantMode::fixed_point, 10, -128, 127), -128);
  EXPECT_EQ(requantize_value(5, 0.5f, RequantMode::float_multiplier, 0, -128, 127), 2);  // 2.5 -> 2
  EXPECT_EQ(requantize_value(5, 0.5f, RequantMode::fixed_point, 0, -128, 127), 3);       // ties up
  EXPECT_EQ(requantize_value(kMax, 1.0f, RequantMode::float_multiplier, 0, 0, 255), 255);
  EXPECT_EQ(requantize_value(123, 0.0f, RequantMode::fixed_point, 7, 0, 255), 7);
  EXPECT_QFORGE_ERROR(requantize_value(1, -0.5f, RequantMode::float_multiplier, 0, 0, 255),
                      ErrorCode::invalid_argument, "multiplier = -0.5");
  EXPECT_QFORGE_ERROR(requantize_value(1, std::numeric_limits<float>::infinity(),
                                       RequantMode::fixed_point, 0, 0, 255),
                      ErrorCode::invalid_argument, "expected a finite value >= 0");
}

}  // namespace
}  // namespace qforge
