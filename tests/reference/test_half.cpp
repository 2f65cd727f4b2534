// float16 / bfloat16 conversions: exhaustive widening round trips, and narrowing checked against
// an independent nearest-value search in double (and the compiler's _Float16 where it exists).
#include <cmath>
#include <cstring>
#include <limits>

#include "qforge/half.h"
#include "test_support.h"

namespace qforge {
namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Value of a 16-bit pattern as double; `half` selects float16, else bfloat16.
double value16(std::uint16_t bits, bool half) {
  return half ? to_float(Float16{bits}) : to_float(BFloat16{bits});
}

// Checks that `got` is the round-to-nearest-even 16-bit value of f: no other finite pattern of
// the same sign is closer, and a tie has an even last bit. Overflow must give inf exactly when
// f is at or beyond the midpoint above the largest finite value.
void expect_nearest(float f, std::uint16_t got, bool half) {
  SCOPED_TRACE(::testing::Message() << "f = " << f << " (0x" << std::hex << bits_of(f) << ")");
  const std::uint16_t sign = (bits_of(f) >> 16) & 0x8000;
  const std::uint16_t inf = half ? 0x7C00 : 0x7F80;
  const std::uint16_t max_finite = inf - 1;
  const double x = std::fabs(static_cast<double>(f));
  ASSERT_EQ(got & 0x8000, sign);
  const std::uint16_t mag = got & 0x7FFF;
  const double top = value16(max_finite, half);
  const double ulp_top = top - value16(max_finite - 1, half);
  if (x >= top + ulp_top / 2) {
    EXPECT_EQ(mag, inf);
    return;
  }
  ASSERT_LT(mag, inf);
  const double v = value16(mag, half);
  const double err = std::fabs(v - x);
  if (mag > 0) {
    EXPECT_LE(err, std::fabs(value16(mag - 1, half) - x));
  }
  if (mag < max_finite) {
    EXPECT_LE(err, std::fabs(value16(mag + 1, half) - x));
  }
  const bool tie = (mag > 0 && std::fabs(value16(mag - 1, half) - x) == err) ||
                   (mag < max_finite && std::fabs(value16(mag + 1, half) - x) == err);
  if (tie) {
    EXPECT_EQ(mag & 1, 0) << "tie not broken to even";
  }
}

TEST(Half, Float16WideningIsExactAndRoundTrips) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const Float16 h{static_cast<std::uint16_t>(b)};
    const float f = to_float(h);
    const bool nan = (b & 0x7C00) == 0x7C00 && (b & 0x3FF) != 0;
    if (nan) {
      EXPECT_TRUE(std::isnan(f)) << b;
      EXPECT_TRUE(std::isnan(to_float(to_float16(f)))) << b;
    } else {
      EXPECT_EQ(to_float16(f).bits, b) << "pattern 0x" << std::hex << b;
    }
  }
}

TEST(Half, BFloat16WideningIsExactAndRoundTrips) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const BFloat16 h{static_cast<std::uint16_t>(b)};
    const float f = to_float(h);
    EXPECT_EQ(bits_of(f), b << 16);
    const bool nan = (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
    if (nan) EXPECT_TRUE(std::isnan(to_float(to_bfloat16(f))));
    else EXPECT_EQ(to_bfloat16(f).bits, b) << "pattern 0x" << std::hex << b;
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(to_float16(1.0f).bits, 0x3C00);
  EXPECT_EQ(to_float16(-2.0f).bits, 0xC000);
  EXPECT_EQ(to_float16(65504.0f).bits, 0x7BFF);
  EXPECT_EQ(to_float16(65519.99f).bits, 0x7BFF);
  EXPECT_EQ(to_float16(65520.0f).bits, 0x7C00);  // the midpoint ties to the even inf
  EXPECT_EQ(to_float16(std::numeric_limits<float>::infinity()).bits, 0x7C00);
  EXPECT_EQ(to_float16(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(to_float16(std::ldexp(1.0f, -25)).bits, 0x0000);  // tie with zero: even
  EXPECT_EQ(to_float16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)).bits, 0x0001);
  EXPECT_EQ(to_float16(std::ldexp(3.0f, -25)).bits, 0x0002);  // 1.5 units ties to 2
  EXPECT_EQ(to_float16(-0.0f).bits, 0x8000);
  EXPECT_EQ(to_float16(1.0f + std::ldexp(1.0f, -11)).bits, 0x3C00);      // tie to even
  EXPECT_EQ(to_float16(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3C02);  // tie to even
  EXPECT_TRUE(std::isnan(to_float(to_float16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(to_bfloat16(1.0f).bits, 0x3F80);
  EXPECT_EQ(to_bfloat16(float_of(0x3F808000)).bits, 0x3F80);  // tie to even
  EXPECT_EQ(to_bfloat16(float_of(0x3F818000)).bits, 0x3F82);  // tie to even (up)
  EXPECT_EQ(to_bfloat16(float_of(0x7F7FFFFF)).bits, 0x7F80);  // overflow rounds to inf
  // A NaN whose payload sits only in the low 16 bits must stay NaN, not become inf.
  EXPECT_TRUE(std::isnan(to_float(to_bfloat16(float_of(0x7F800001)))));
  EXPECT_TRUE(std::isnan(to_float(to_float16(float_of(0x7F800001)))));
}

TEST(Half, NarrowingIsRoundToNearestEven) {
  QFORGE_SEEDED_RNG(rng);
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns cover every exponent; a second set concentrates on the f16 range.
    float f = float_of(static_cast<std::uint32_t>(rng()));
    if (std::isnan(f)) continue;
    if (i % 2)
      f = std::ldexp(test::uniform(rng, -2.0f, 2.0f),
                     static_cast<int>(test::uniform_int(rng, -27, 17)));
    expect_nearest(f, to_float16(f).bits, true);
    expect_nearest(f, to_bfloat16(f).bits, false);
#ifdef __FLT16_MAX__
    const _Float16 h = static_cast<_Float16>(f);
    std::uint16_t hb;
    std::memcpy(&hb, &h, 2);
    EXPECT_EQ(to_float16(f).bits, hb) << f;
#endif
  }
}

TEST(Half, LoadStoreFloat) {
  const float values[] = {1.5f, -0.333333343f, 65536.0f, 1e-6f};
  for (const FloatType t : {FloatType::f32, FloatType::f16, FloatType::bf16}) {
    std::vector<unsigned char> buf(4 * 4, 0xAB);
    for (std::size_t i = 0; i < 4; ++i) store_float(t, buf.data(), i, values[i]);
    for (std::size_t i = 0; i < 4; ++i) {
      const float expected = t == FloatType::f32   ? values[i]
                             : t == FloatType::f16 ? to_float(to_float16(values[i]))
                                                   : to_float(to_bfloat16(values[i]));
      EXPECT_EQ(bits_of(load_float(t, buf.data(), i)), bits_of(expected)) << name(t) << " " << i;
    }
    // Nothing beyond the 4 elements was written.
    for (std::size_t b = 4 * static_cast<std::size_t>(size_of(t)); b < buf.size(); ++b)
      EXPECT_EQ(buf[b], 0xAB) << name(t);
  }
  EXPECT_EQ(to_float(to_float16(65536.0f)), std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace qforge
