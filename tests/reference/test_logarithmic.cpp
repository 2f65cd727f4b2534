// Logarithmic (power-of-two) codes: encoding, log-domain rounding at the sqrt(2) boundary,
// saturation, underflow, unsigned types, non-finite inputs, and an independent log2 oracle.
#include <algorithm>
#include <cmath>
#include <limits>

#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

using reference::dequantize_log_value;
using reference::quantize_log_value;

TEST(Logarithmic, Encoding) {
  EXPECT_EQ(quantize_log_value(1.0f, 1.0f, DType::int8), 1);  // s * 2^0
  EXPECT_EQ(quantize_log_value(0.5f, 1.0f, DType::int8), 2);  // s * 2^-1
  EXPECT_EQ(quantize_log_value(0.25f, 1.0f, DType::int8), 3);
  EXPECT_EQ(quantize_log_value(-0.25f, 1.0f, DType::int8), -3);
  EXPECT_EQ(quantize_log_value(0.0f, 1.0f, DType::int8), 0);
  EXPECT_EQ(quantize_log_value(-0.0f, 1.0f, DType::int8), 0);
  EXPECT_EQ(quantize_log_value(3.0f, 6.0f, DType::int8), 2);
  EXPECT_EQ(dequantize_log_value(0, 6.0f), 0.0f);
  EXPECT_EQ(dequantize_log_value(1, 6.0f), 6.0f);
  EXPECT_EQ(dequantize_log_value(3, 6.0f), 1.5f);
  EXPECT_EQ(dequantize_log_value(-4, 6.0f), -0.75f);
  EXPECT_EQ(dequantize_log_value(127, 1.0f), std::ldexp(1.0f, -126));
  EXPECT_EQ(dequantize_log_value(std::numeric_limits<std::int32_t>::min(), 1e30f),
            0.0f);  // underflow
}

TEST(Logarithmic, RoundsInTheLogDomainAtSqrt2) {
  // Between 0.5 and 1 the boundary is 1/sqrt(2) = 0.70710678...; no float equals it.
  const float below = 0x1.6a09e6p-1f;                          // 0.70710677
  const float above = 0x1.6a09e8p-1f;                          // 0.70710683
  EXPECT_EQ(quantize_log_value(below, 1.0f, DType::int8), 2);  // -> 0.5
  EXPECT_EQ(quantize_log_value(above, 1.0f, DType::int8), 1);  // -> 1.0
  // Not the linear midpoint 0.75: 0.74 is linearly nearer to 0.5 but log2(0.74) = -0.43
  // rounds to 0, so it maps to 1.0; log2(0.70) = -0.51 rounds to -1.
  EXPECT_EQ(quantize_log_value(0.74f, 1.0f, DType::int8), 1);
  EXPECT_EQ(quantize_log_value(0.70f, 1.0f, DType::int8), 2);
  EXPECT_EQ(quantize_log_value(-0x1.6a09e6p-5f, 1.0f, DType::int8), -6);  // -> -2^-5
  EXPECT_EQ(quantize_log_value(-0x1.6a09e8p-5f, 1.0f, DType::int8), -5);  // -> -2^-4
}

TEST(Logarithmic, SaturationAndUnderflow) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(quantize_log_value(1.4f, 1.0f, DType::int8), 1);    // rounds down to s
  EXPECT_EQ(quantize_log_value(100.0f, 1.0f, DType::int8), 1);  // clips to s
  EXPECT_EQ(quantize_log_value(inf, 1.0f, DType::int8), 1);
  EXPECT_EQ(quantize_log_value(-inf, 1.0f, DType::int8), -1);
  EXPECT_EQ(quantize_log_value(std::numeric_limits<float>::quiet_NaN(), 1.0f, DType::int8), 0);
  // int4: k in [0, 6], smallest magnitude s * 2^-6.
  EXPECT_EQ(quantize_log_value(std::ldexp(1.0f, -6), 1.0f, DType::int4), 7);
  EXPECT_EQ(quantize_log_value(0.75f * std::ldexp(1.0f, -6), 1.0f, DType::int4), 7);
  EXPECT_EQ(quantize_log_value(0.7f * std::ldexp(1.0f, -6), 1.0f, DType::int4), 0);
  EXPECT_EQ(quantize_log_value(std::ldexp(1.0f, -7), 1.0f, DType::int4), 0);
  // int8: k up to 126; subnormal a = |x| / s still rounds exactly.
  EXPECT_EQ(quantize_log_value(std::ldexp(1.0f, -126), 1.0f, DType::int8), 127);
  EXPECT_EQ(quantize_log_value(std::ldexp(1.0f, -127), 1.0f, DType::int8), 0);
  EXPECT_EQ(quantize_log_value(std::ldexp(1.0f, -140), 1.0f, DType::int16), 141);
  // x / s overflowing float32 saturates; underflowing to 0 gives 0.
  EXPECT_EQ(quantize_log_value(3e38f, 1e-30f, DType::int8), 1);
  EXPECT_EQ(quantize_log_value(1e-30f, 1e30f, DType::int16), 0);
}

TEST(Logarithmic, UnsignedTypesOnlyEncodeNonNegatives) {
  EXPECT_EQ(quantize_log_value(0.25f, 1.0f, DType::uint8), 3);
  EXPECT_EQ(quantize_log_value(-0.25f, 1.0f, DType::uint8), 0);
  EXPECT_EQ(quantize_log_value(-std::numeric_limits<float>::infinity(), 1.0f, DType::uint4), 0);
  EXPECT_EQ(quantize_log_value(std::ldexp(1.0f, -14), 1.0f, DType::uint4), 15);  // k max = 14
  EXPECT_EQ(quantize_log_value(std::ldexp(1.0f, -15), 1.0f, DType::uint4), 0);
  EXPECT_EQ(quantize_log_value(std::ldexp(1.0f, -254), std::ldexp(1.0f, 127), DType::uint8), 0);
}

TEST(Logarithmic, TensorRoundTripOfEveryCode) {
  for (const DType t : {DType::int8, DType::uint8, DType::int4, DType::uint4}) {
    const auto p = QuantizationParams::logarithmic(t, 3.0f);
    // Codes whose magnitude 3 * 2^-k falls below FLT_MIN decode to subnormals (uint8 reaches
    // k = 254): float32 cannot hold them exactly, so the exact round trip stops there.
    const std::int32_t kmax_normal = std::min(p.qmax(), 127);
    const std::int32_t lo = std::max(p.qmin(), -kmax_normal), hi = kmax_normal;
    std::vector<float> x;
    for (std::int32_t q = lo; q <= hi; ++q) x.push_back(dequantize_log_value(q, 3.0f));
    const QuantizeDesc d{{static_cast<std::int64_t>(x.size())}, p};
    std::vector<std::uint8_t> q(storage_bytes(t, x.size()));
    reference::quantize(d, x.data(), q.data());
    for (std::size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(load_element(t, q.data(), i), lo + static_cast<std::int32_t>(i)) << name(t);
    std::vector<float> back(x.size());
    reference::dequantize(d, q.data(), back.data());
    EXPECT_EQ(back, x) << name(t);
  }
}

TEST(Logarithmic, MatchesLog2Oracle) {
  QFORGE_SEEDED_RNG(rng);
  for (int i = 0; i < 200000; ++i) {
    const DType t = static_cast<DType>(test::uniform_int(rng, 0, 5));
    const auto& tr = traits(t);
    const float s = std::ldexp(test::uniform(rng, 0.5f, 1.0f),
                               static_cast<int>(test::uniform_int(rng, -10, 10)));
    const float x = std::ldexp(test::uniform(rng, -1.0f, 1.0f),
                               static_cast<int>(test::uniform_int(rng, -20, 12)));
    // Independent: round log2 in double (no float is within 1e-8 of a half-integer log2, far
    // beyond double's error), then clip and underflow as documented.
    std::int32_t expected = 0;
    const double a = static_cast<double>(std::fabs(x) / s);
    if (a > 0 && (x > 0 || tr.is_signed)) {
      const double k = std::max(0.0, -std::round(std::log2(a)));
      if (k <= tr.qmax - 1) expected = static_cast<std::int32_t>(k + 1) * (x < 0 ? -1 : 1);
    }
    ASSERT_EQ(quantize_log_value(x, s, t), expected) << "x=" << x << " s=" << s << " " << name(t);
    // Inside the representable magnitudes the relative error is below sqrt(2) - 1.
    if (expected != 0 && std::fabs(x) <= s) {
      const float back = dequantize_log_value(expected, s);
      ASSERT_LE(std::fabs(back - x), 0.41422f * std::fabs(x)) << x;
    }
  }
}

}  // namespace
}  // namespace qforge
