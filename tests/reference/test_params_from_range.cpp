// params_from_range / params_from_ranges: the DESIGN.md formulas, zero and extreme ranges, errors.
#include <cmath>
#include <limits>

#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

using reference::params_from_range;
using reference::params_from_ranges;

TEST(ParamsFromRange, AffineExactCases) {
  auto p = params_from_range(DType::uint8, Mapping::affine, 0.0f, 255.0f);
  EXPECT_EQ(p.scale(), 1.0f);
  EXPECT_EQ(p.zero_point(), 0);
  p = params_from_range(DType::int8, Mapping::affine, -128.0f, 127.0f);
  EXPECT_EQ(p.scale(), 1.0f);
  EXPECT_EQ(p.zero_point(), 0);
  p = params_from_range(DType::int4, Mapping::affine, -8.0f, 7.0f);
  EXPECT_EQ(p.scale(), 1.0f);
  EXPECT_EQ(p.zero_point(), 0);
  p = params_from_range(DType::uint4, Mapping::affine, -5.0f, 10.0f);
  EXPECT_EQ(p.scale(), 1.0f);
  EXPECT_EQ(p.zero_point(), 5);
  p = params_from_range(DType::uint16, Mapping::affine, -65535.0f, 0.0f);
  EXPECT_EQ(p.scale(), 1.0f);
  EXPECT_EQ(p.zero_point(), 65535);
  EXPECT_EQ(p.scheme(), Scheme::per_tensor_affine());
}

TEST(ParamsFromRange, RangeIsWidenedToHoldZero) {
  // [1, 5] becomes [0, 5]; [-5, -1] becomes [-5, 0].
  auto p = params_from_range(DType::uint8, Mapping::affine, 1.0f, 5.0f);
  EXPECT_EQ(p.scale(), 5.0f / 255.0f);
  EXPECT_EQ(p.zero_point(), 0);
  p = params_from_range(DType::uint8, Mapping::affine, -5.0f, -1.0f);
  EXPECT_EQ(p.scale(), 5.0f / 255.0f);
  EXPECT_EQ(p.zero_point(), 255);
  p = params_from_range(DType::int8, Mapping::affine, -5.0f, -1.0f);
  EXPECT_EQ(p.zero_point(), 127);
  // 0.0 is exact: quantizing it gives the zero point, which dequantizes to 0.
  for (const DType t : {DType::int8, DType::uint8, DType::int4, DType::uint4, DType::int16}) {
    p = params_from_range(t, Mapping::affine, -0.37f, 2.9f);
    const auto q = reference::quantize_value(0.0f, p.scale(), p.zero_point(), p.qmin(), p.qmax());
    EXPECT_EQ(reference::dequantize_value(q, p.scale(), p.zero_point()), 0.0f) << name(t);
  }
}

TEST(ParamsFromRange, SymmetricUsesNarrowRange) {
  auto p = params_from_range(DType::int8, Mapping::symmetric, -3.0f, 1.27f);
  EXPECT_EQ(p.scale(), 3.0f / 127.0f);
  EXPECT_EQ(p.zero_point(), 0);
  EXPECT_EQ(p.qmin(), -127);
  EXPECT_EQ(p.qmax(), 127);
  // Unsigned symmetric: zero point at the midpoint, 127 steps each way.
  p = params_from_range(DType::uint8, Mapping::symmetric, -1.27f, 0.5f);
  EXPECT_EQ(p.scale(), 1.27f / 127.0f);
  EXPECT_EQ(p.zero_point(), 128);
  EXPECT_EQ(p.qmin(), 1);
  EXPECT_EQ(p.qmax(), 255);
  p = params_from_range(DType::int4, Mapping::symmetric, -7.0f, 3.0f);
  EXPECT_EQ(p.scale(), 1.0f);
  p = params_from_range(DType::uint4, Mapping::symmetric, 0.0f, 14.0f);
  EXPECT_EQ(p.scale(), 2.0f);
  EXPECT_EQ(p.zero_point(), 8);
  p = params_from_range(DType::uint16, Mapping::symmetric, -32767.0f, 1.0f);
  EXPECT_EQ(p.scale(), 1.0f);
  EXPECT_EQ(p.zero_point(), 32768);
  p = params_from_range(DType::int16, Mapping::symmetric, -1.0f, 32767.0f);
  EXPECT_EQ(p.scale(), 1.0f);
}

TEST(ParamsFromRange, BinaryAndLogarithmic) {
  auto p = params_from_range(DType::binary, Mapping::symmetric, -0.5f, 2.0f);
  EXPECT_EQ(p.scale(), 2.0f);
  EXPECT_EQ(p.zero_point(), 0);
  p = params_from_range(DType::int8, Mapping::logarithmic, -3.5f, 2.0f);
  EXPECT_EQ(p.scale(), 3.5f);
  EXPECT_EQ(p.zero_point(), 0);
  EXPECT_EQ(p.scheme().mapping, Mapping::logarithmic);
}

TEST(ParamsFromRange, ZeroRangeGivesScaleOne) {
  for (const Mapping m : {Mapping::affine, Mapping::symmetric, Mapping::logarithmic})
    for (const DType t :
         {DType::int8, DType::uint8, DType::int4, DType::uint4, DType::int16, DType::uint16}) {
      const auto p = params_from_range(t, m, 0.0f, 0.0f);
      EXPECT_EQ(p.scale(), 1.0f) << name(t) << " " << to_string(m);
    }
  EXPECT_EQ(params_from_range(DType::binary, Mapping::symmetric, 0.0f, 0.0f).scale(), 1.0f);
  // Affine zero range: lo = 0, so z = qmin.
  EXPECT_EQ(params_from_range(DType::int8, Mapping::affine, 0.0f, 0.0f).zero_point(), -128);
}

TEST(ParamsFromRange, ExtremeRanges) {
  // So narrow that (hi - lo) / 255 underflows to 0: treated like a zero range.
  auto p = params_from_range(DType::uint8, Mapping::affine, 0.0f, 1e-44f);
  EXPECT_EQ(p.scale(), 1.0f);
  p = params_from_range(DType::int8, Mapping::symmetric, -1e-44f, 0.0f);
  EXPECT_EQ(p.scale(), 1.0f);
  // Tiny but representable.
  p = params_from_range(DType::int8, Mapping::symmetric, -1.27e-30f, 0.0f);
  EXPECT_FLOAT_EQ(p.scale(), 1e-32f);
  // hi - lo overflows float32; the scale itself is finite.
  const float big = 3e38f;
  p = params_from_range(DType::int8, Mapping::affine, -big, big);
  EXPECT_TRUE(std::isfinite(p.scale()));
  EXPECT_NEAR(p.scale(), 2 * 3e38 / 255, 1e31);
  EXPECT_EQ(reference::quantize_value(big, p.scale(), p.zero_point(), p.qmin(), p.qmax()), 127);
  EXPECT_EQ(reference::quantize_value(-big, p.scale(), p.zero_point(), p.qmin(), p.qmax()), -128);
  p = params_from_range(DType::uint8, Mapping::affine, -1e30f, 1e30f);
  EXPECT_FLOAT_EQ(p.scale(), 2e30f / 255.0f);
}

TEST(ParamsFromRange, Errors) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_QFORGE_ERROR(params_from_range(DType::int8, Mapping::affine, nan, 1.0f),
                      ErrorCode::invalid_argument, "expected finite bounds");
  EXPECT_QFORGE_ERROR(params_from_range(DType::int8, Mapping::symmetric, -1.0f, inf),
                      ErrorCode::invalid_argument, "range [-1, inf]");
  EXPECT_QFORGE_ERROR(params_from_range(DType::int8, Mapping::affine, 3.0f, 1.0f),
                      ErrorCode::invalid_argument, "expected lo <= hi");
  EXPECT_QFORGE_ERROR(params_from_range(DType::binary, Mapping::affine, -1.0f, 1.0f),
                      ErrorCode::invalid_argument, "expected symmetric");
  EXPECT_QFORGE_ERROR(params_from_range(DType::binary, Mapping::logarithmic, -1.0f, 1.0f),
                      ErrorCode::invalid_argument, "binary with the logarithmic mapping");
}

TEST(ParamsFromRanges, PerChannelAndBlock) {
  const std::vector<float> lo = {-1.0f, 0.0f, -2.0f};
  const std::vector<float> hi = {1.0f, 2.55f, -1.0f};
  auto p = params_from_ranges(DType::uint8, Scheme::per_channel_affine(1), lo, hi);
  ASSERT_EQ(p.count(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto one = params_from_range(DType::uint8, Mapping::affine, lo[i], hi[i]);
    EXPECT_EQ(p.scale(i), one.scale()) << i;
    EXPECT_EQ(p.zero_point(i), one.zero_point()) << i;
  }
  EXPECT_EQ(p.scheme().axis, 1);
  p = params_from_ranges(DType::int4, Scheme::block_symmetric(16), lo, hi);
  EXPECT_EQ(p.scheme().block_size, 16);
  EXPECT_EQ(p.scale(2), 2.0f / 7.0f);
  p = params_from_ranges(DType::int8, Scheme::per_tensor_symmetric(), std::vector<float>{-2.54f},
                         std::vector<float>{1.0f});
  EXPECT_EQ(p.scale(), 2.54f / 127.0f);
}

TEST(ParamsFromRanges, Errors) {
  const std::vector<float> two = {0.0f, 1.0f};
  const std::vector<float> three = {1.0f, 2.0f, 3.0f};
  EXPECT_QFORGE_ERROR(params_from_ranges(DType::int8, Scheme::per_channel_affine(0), two, three),
                      ErrorCode::invalid_argument, "2 lower bounds and 3 upper bounds");
  EXPECT_QFORGE_ERROR(params_from_ranges(DType::int8, Scheme::per_tensor_affine(), two, two),
                      ErrorCode::invalid_argument, "per_tensor scheme; expected 1");
  EXPECT_QFORGE_ERROR(params_from_ranges(DType::int8, Scheme::per_channel_affine(0),
                                         std::vector<float>{}, std::vector<float>{}),
                      ErrorCode::invalid_argument, "expected at least one");
  const std::vector<float> bad_lo = {0.0f, 5.0f};
  EXPECT_QFORGE_ERROR(params_from_ranges(DType::int8, Scheme::per_channel_affine(0), bad_lo, two),
                      ErrorCode::invalid_argument, "(range 1)");
}

TEST(ParamsFromRange, RandomRangesRepresentTheirEnds) {
  QFORGE_SEEDED_RNG(rng);
  for (int i = 0; i < 2000; ++i) {
    const DType t = static_cast<DType>(test::uniform_int(rng, 0, 5));  // every dtype but binary
    const Mapping m = i % 2 ? Mapping::affine : Mapping::symmetric;
    const float e = std::ldexp(1.0f, static_cast<int>(test::uniform_int(rng, -60, 60)));
    float lo = test::uniform(rng, -1.0f, 1.0f) * e, hi = test::uniform(rng, -1.0f, 1.0f) * e;
    if (lo > hi) std::swap(lo, hi);
    const auto p = params_from_range(t, m, lo, hi);
    SCOPED_TRACE(p.to_string() + " lo=" + std::to_string(lo) + " hi=" + std::to_string(hi));
    ASSERT_TRUE(std::isfinite(p.scale()) && p.scale() > 0.0f);
    // Both ends of the (widened) range quantize to within one step of themselves.
    for (const float x : {std::min(lo, 0.0f), std::max(hi, 0.0f)}) {
      const auto q = reference::quantize_value(x, p.scale(), p.zero_point(), p.qmin(), p.qmax());
      const float back = reference::dequantize_value(q, p.scale(), p.zero_point());
      EXPECT_LE(std::fabs(back - x), 1.0001f * p.scale()) << x;
    }
  }
}

}  // namespace
}  // namespace qforge
