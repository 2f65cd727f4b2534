// quantize_codes (model/quantize/src/weight_codes.cpp) against reference::quantize, byte for
// byte: int8 and uint8, per tensor and per channel along every axis, affine and symmetric, on
// random values and on the values where rounding and saturation decide (exact halves, the
// edges of the range, NaN, infinities, signed zeros, denormals, the largest floats); and the
// schemes it hands to reference::quantize.
#include "weight_codes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "qforge/checked_size.h"
#include "qforge/error.h"
#include "qforge/reference.h"
#include "test_support.h"

namespace qforge::model::quantize {
namespace {

// Random values mixed with the ones that decide rounding and saturation for `scale`.
std::vector<float> hard_values(std::mt19937_64& g, std::size_t n, float scale) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 11), code(-300, 300);
  std::vector<float> x(n);
  for (float& v : x) {
    switch (pick(g)) {
      case 0: v = (static_cast<float>(code(g)) + 0.5f) * scale; break;  // a half
      case 1: v = static_cast<float>(code(g)) * scale; break;           // a code
      case 2: v = std::nextafter((static_cast<float>(code(g)) + 0.5f) * scale, 0.0f); break;
      case 3: v = std::numeric_limits<float>::quiet_NaN(); break;
      case 4: v = (pick(g) < 6 ? 1.0f : -1.0f) * std::numeric_limits<float>::infinity(); break;
      case 5: v = pick(g) < 6 ? 0.0f : -0.0f; break;
      case 6: v = (pick(g) < 6 ? 1.0f : -1.0f) * std::numeric_limits<float>::denorm_min(); break;
      case 7: v = (pick(g) < 6 ? 1.0f : -1.0f) * std::numeric_limits<float>::max(); break;
      default: v = normal(g) * 100.0f * scale; break;
    }
  }
  return x;
}

void expect_reference_codes(const Shape& shape, const QuantizationParams& p,
                            const std::vector<float>& x) {
  const std::int64_t n = element_count(shape);
  std::vector<std::byte> want(checked_storage_bytes("want", p.dtype(), n));
  std::vector<std::byte> got(want.size(), std::byte{0x5a});
  reference::quantize(QuantizeDesc{shape, p}, x.data(), want.data());
  quantize_codes(shape, p, x, got);
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(want[i], got[i]) << "byte " << i << " of shape " << qforge::to_string(shape) << ", "
                               << p.to_string() << ", value " << x[std::min(i, x.size() - 1)];
}

TEST(WeightCodes, EqualReferenceQuantizeForByteDtypes) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(71);
  std::uniform_real_distribution<float> log_scale(-8.0f, 2.0f);
  const std::vector<Shape> shapes = {{1}, {37}, {5, 13}, {64, 3}, {3, 4, 5}};
  for (const DType dtype : {DType::int8, DType::uint8})
    for (const Mapping mapping : {Mapping::affine, Mapping::symmetric})
      for (const Shape& shape : shapes)
        for (int axis = -1; axis < static_cast<int>(shape.size()); ++axis) {
          if (dtype == DType::uint8 && mapping == Mapping::symmetric) continue;
          const std::int64_t channels = axis < 0 ? 1 : shape[static_cast<std::size_t>(axis)];
          std::vector<float> scales;
          std::vector<std::int32_t> zero_points;
          std::uniform_int_distribution<int> zp(dtype == DType::int8 ? -128 : 0,
                                                dtype == DType::int8 ? 127 : 255);
          for (std::int64_t c = 0; c < channels; ++c) {
            // Powers of two as well, where x / scale is exact and halves stay halves.
            const float e = log_scale(g);
            scales.push_back(c % 2 ? std::exp2(std::round(e)) : std::exp2(e));
            zero_points.push_back(mapping == Mapping::affine ? zp(g) : 0);
          }
          const QuantizationParams p =
              axis < 0
                  ? (mapping == Mapping::affine
                         ? QuantizationParams::per_tensor_affine(dtype, scales[0], zero_points[0])
                         : QuantizationParams::per_tensor_symmetric(dtype, scales[0]))
                  : QuantizationParams::per_channel(
                        dtype, mapping, axis, scales,
                        mapping == Mapping::affine ? zero_points : std::vector<std::int32_t>{});
          const auto n = static_cast<std::size_t>(element_count(shape));
          // Values sized for the first channel's scale; other channels see them too, so
          // saturation and tiny ratios are covered in both directions.
          expect_reference_codes(shape, p, hard_values(g, n, scales[0]));
        }
}

TEST(WeightCodes, OtherSchemesAreReferenceQuantize) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(73);
  const Shape shape{6, 8};
  expect_reference_codes(shape, QuantizationParams::per_tensor_symmetric(DType::int4, 0.1f),
                         hard_values(g, 48, 0.1f));
  expect_reference_codes(shape,
                         QuantizationParams::per_channel(DType::int16, Mapping::affine, 0,
                                                         std::vector<float>(6, 0.01f)),
                         hard_values(g, 48, 0.01f));
  expect_reference_codes(shape,
                         QuantizationParams::blockwise(DType::int8, Mapping::symmetric, 4,
                                                       std::vector<float>(12, 0.05f)),
                         hard_values(g, 48, 0.05f));
}

TEST(WeightCodes, RefusesCodesOfTheWrongSize) {
  const QuantizationParams p = QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f);
  std::vector<float> x(10, 1.0f);
  std::vector<std::byte> codes(9);
  EXPECT_THROW(quantize_codes({10}, p, x, codes), Error);
}

}  // namespace
}  // namespace qforge::model::quantize
