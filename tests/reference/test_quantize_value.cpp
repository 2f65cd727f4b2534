// quantize_value / dequantize_value: rounding, saturation, non-finite inputs, binary, extreme
// scales, and a randomised comparison with an independent formulation (std::nearbyint).
#include <cfenv>
#include <cmath>
#include <limits>

#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

using reference::dequantize_value;
using reference::quantize_value;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(QuantizeValue, OnnxQuantizeLinearExample) {
  // ONNX QuantizeLinear: x = [0, 2, 3, 1000, -254, -1000], scale 2, zero point 128 (uint8).
  const float x[] = {0, 2, 3, 1000, -254, -1000};
  const std::int32_t expected[] = {128, 129, 130, 255, 1, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(quantize_value(x[i], 2.0f, 128, 0, 255), expected[i]) << i;
}

TEST(QuantizeValue, RoundsHalfToEven) {
  const float x[] = {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, -3.5f, 126.5f, -127.5f};
  const std::int32_t expected[] = {0, 2, 2, 4, 0, -2, -2, -4, 126, -128};
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(quantize_value(x[i], 1.0f, 0, -128, 127), expected[i]) << x[i];
  // Just either side of a tie.
  EXPECT_EQ(quantize_value(std::nextafter(0.5f, 1.0f), 1.0f, 0, -128, 127), 1);
  EXPECT_EQ(quantize_value(std::nextafter(0.5f, 0.0f), 1.0f, 0, -128, 127), 0);
  EXPECT_EQ(quantize_value(std::nextafter(-2.5f, -3.0f), 1.0f, 0, -128, 127), -3);
  // The quotient is rounded to float32 before rounding to an integer (a true float32 division):
  // 0.05f / 0.02f is 2.50000009 exactly but 2.5f in float32, a tie that goes to 2 (not 3);
  // 0.21f / 0.14f is 1.49999995 exactly but 1.5f in float32, which goes to 2 (not 1).
  EXPECT_EQ(0.05f / 0.02f, 2.5f);
  EXPECT_EQ(quantize_value(0.05f, 0.02f, 0, -128, 127), 2);
  EXPECT_EQ(0.21f / 0.14f, 1.5f);
  EXPECT_EQ(quantize_value(0.21f, 0.14f, 0, -128, 127), 2);
  // Large integral values pass through unchanged (2^23 + 1 is odd).
  EXPECT_EQ(quantize_value(8388609.0f, 1.0f, 0, std::numeric_limits<std::int32_t>::min(),
                           std::numeric_limits<std::int32_t>::max()),
            8388609);
}

TEST(QuantizeValue, SaturatesAndHandlesNonFinite) {
  EXPECT_EQ(quantize_value(kInf, 0.1f, 3, -128, 127), 127);
  EXPECT_EQ(quantize_value(-kInf, 0.1f, 3, -128, 127), -128);
  EXPECT_EQ(quantize_value(kNaN, 0.1f, 3, -128, 127), 3);
  EXPECT_EQ(quantize_value(-kNaN, 0.1f, 200, 0, 255), 200);
  // Symmetric narrow range: -128 never occurs.
  EXPECT_EQ(quantize_value(-1e9f, 1.0f, 0, -127, 127), -127);
  EXPECT_EQ(quantize_value(-kInf, 1.0f, 0, -127, 127), -127);
  // The zero point is added before saturation.
  EXPECT_EQ(quantize_value(100.0f, 1.0f, 100, -128, 127), 127);
  EXPECT_EQ(quantize_value(-100.0f, 1.0f, -100, -128, 127), -128);
  EXPECT_EQ(quantize_value(-3.0f, 1.0f, 0, 0, 15), 0);
  EXPECT_EQ(quantize_value(9.0f, 1.0f, 0, -8, 7), 7);
  EXPECT_EQ(quantize_value(70000.0f, 1.0f, 0, 0, 65535), 65535);
}

TEST(QuantizeValue, TinyAndHugeScales) {
  EXPECT_EQ(quantize_value(1e-28f, 1e-30f, 0, -128, 127), 100);
  EXPECT_EQ(quantize_value(1.0f, 1e-30f, 0, -128, 127), 127);   // 1e30 saturates
  EXPECT_EQ(quantize_value(3e38f, 1e-30f, 0, -128, 127), 127);  // x / s overflows to inf
  EXPECT_EQ(quantize_value(-3e38f, 1e-30f, 5, -128, 127), -128);
  EXPECT_EQ(quantize_value(1e32f, 1e30f, 0, -128, 127), 100);
  EXPECT_EQ(quantize_value(1.0f, 1e30f, 7, -128, 127), 7);     // underflows to 0
  EXPECT_EQ(quantize_value(-1e-40f, 1e30f, 7, -128, 127), 7);  // subnormal input
  EXPECT_FLOAT_EQ(dequantize_value(100, 1e-30f, 0), 1e-28f);
  EXPECT_FLOAT_EQ(dequantize_value(-100, 1e30f, 0), -1e32f);
  EXPECT_EQ(dequantize_value(127, 3e36f, -128), kInf);  // 255 * 3e36 overflows float32
}

TEST(QuantizeValue, BinaryIsTheSign) {
  // Binary's range [-1, 1] selects the sign rule: bit 1 (+1) when !(x < 0).
  EXPECT_EQ(quantize_value(0.0f, 1.0f, 0, -1, 1), 1);
  EXPECT_EQ(quantize_value(-0.0f, 1.0f, 0, -1, 1), 1);
  EXPECT_EQ(quantize_value(kNaN, 1.0f, 0, -1, 1), 1);
  EXPECT_EQ(quantize_value(-1e-30f, 1.0f, 0, -1, 1), -1);
  EXPECT_EQ(quantize_value(0.2f, 1.0f, 0, -1, 1), 1);
  EXPECT_EQ(quantize_value(-kInf, 1.0f, 0, -1, 1), -1);
  EXPECT_EQ(dequantize_value(1, 0.25f, 0), 0.25f);
  EXPECT_EQ(dequantize_value(-1, 0.25f, 0), -0.25f);
}

TEST(QuantizeValue, Dequantize) {
  EXPECT_EQ(dequantize_value(130, 2.0f, 128), 4.0f);
  EXPECT_EQ(dequantize_value(-128, 0.5f, 0), -64.0f);
  EXPECT_EQ(dequantize_value(1, 0.01f, 128), -127 * 0.01f);
  EXPECT_EQ(dequantize_value(65535, 1.0f, 0), 65535.0f);
  EXPECT_EQ(dequantize_value(-32768, 1.0f, 32767), -65535.0f);
}

TEST(QuantizeValue, MatchesNearbyintFormulation) {
  QFORGE_SEEDED_RNG(rng);
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  for (int i = 0; i < 200000; ++i) {
    const DType t = static_cast<DType>(test::uniform_int(rng, 0, 5));
    const auto& tr = traits(t);
    const bool symmetric = i % 3 == 0;
    const std::int32_t qmin = symmetric ? tr.narrow_qmin : tr.qmin;
    const std::int32_t qmax = symmetric ? tr.narrow_qmax : tr.qmax;
    const std::int32_t z =
        symmetric ? symmetric_zero_point(t)
                  : static_cast<std::int32_t>(test::uniform_int(rng, tr.qmin, tr.qmax));
    const float s = std::ldexp(test::uniform(rng, 0.5f, 1.0f),
                               static_cast<int>(test::uniform_int(rng, -40, 40)));
    // Mostly values near the grid (many exact ties), sometimes anything.
    float x = i % 4 ? s * (static_cast<float>(
                               test::uniform_int(rng, -2 * (qmax - qmin), 2 * (qmax - qmin))) /
                           2.0f)
                    : std::ldexp(test::uniform(rng, -1.0f, 1.0f),
                                 static_cast<int>(test::uniform_int(rng, -60, 60)));
    const double r = std::nearbyint(static_cast<double>(x / s)) + z;  // independent rounding
    const auto expected = static_cast<std::int32_t>(std::clamp<double>(r, qmin, qmax));
    ASSERT_EQ(quantize_value(x, s, z, qmin, qmax), expected)
        << "x=" << x << " s=" << s << " z=" << z << " [" << qmin << ", " << qmax << "]";
  }
}

TEST(QuantizeValue, RoundTripErrorIsAtMostHalfAStep) {
  QFORGE_SEEDED_RNG(rng);
  for (int i = 0; i < 100000; ++i) {
    const DType t = static_cast<DType>(test::uniform_int(rng, 0, 5));
    const auto& tr = traits(t);
    const std::int32_t z = static_cast<std::int32_t>(test::uniform_int(rng, tr.qmin, tr.qmax));
    const float s = std::ldexp(test::uniform(rng, 0.5f, 1.0f),
                               static_cast<int>(test::uniform_int(rng, -30, 30)));
    const float lo = dequantize_value(tr.qmin, s, z), hi = dequantize_value(tr.qmax, s, z);
    const float x = test::uniform(rng, lo, hi);
    const auto q = quantize_value(x, s, z, tr.qmin, tr.qmax);
    const float err = std::fabs(dequantize_value(q, s, z) - x);
    // Half a step, plus the float32 roundings of x / s and (q - z) * s.
    ASSERT_LE(err, s * 0.5f * (1.0f + 1e-5f) + std::fabs(x) * 2e-7f)
        << "x=" << x << " s=" << s << " z=" << z << " q=" << q << " " << name(t);
  }
}

}  // namespace
}  // namespace qforge
