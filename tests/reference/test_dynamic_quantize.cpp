// dynamic_quantize_linear: the DESIGN.md and ONNX examples bit for bit, constant / empty /
// NaN / inf inputs, and agreement with params_from_range + quantize_value.
#include <cmath>
#include <limits>

#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

using reference::dynamic_quantize_linear;

struct Result {
  QuantizationParams params;
  std::vector<std::uint8_t> y;
};

Result run(const std::vector<float>& x, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<std::int64_t>(x.size())};
  std::vector<std::uint8_t> y(x.size());
  auto p = dynamic_quantize_linear(DynamicQuantizeDesc{shape}, x.data(), y.data());
  return {std::move(p), std::move(y)};
}

TEST(DynamicQuantize, DesignExample) {
  const auto r = run({0, 2, -3, -2.5f, 1.34f, 0.5f});
  EXPECT_EQ(r.params.scale(), 0.019607844f);
  EXPECT_EQ(r.params.scale(), 5.0f / 255.0f);
  EXPECT_EQ(r.params.zero_point(), 153);
  EXPECT_EQ(r.y, (std::vector<std::uint8_t>{153, 255, 0, 26, 221, 179}));
  EXPECT_EQ(r.params.dtype(), DType::uint8);
  EXPECT_EQ(r.params.scheme(), Scheme::per_tensor_affine());
}

TEST(DynamicQuantize, OnnxExamples) {
  // All negative: max(0, max x) = 0.
  auto r = run({-1.0f, -2.1f, -1.3f, -2.5f, -3.34f, -4.0f});
  EXPECT_EQ(r.params.scale(), 0.015686275f);
  EXPECT_EQ(r.params.zero_point(), 255);
  EXPECT_EQ(r.y, (std::vector<std::uint8_t>{191, 121, 172, 96, 42, 0}));
  // All positive, shape [3, 4]: min(0, min x) = 0.
  r = run({1, 2.1f, 1.3f, 2.5f, 3.34f, 4.0f, 1.5f, 2.6f, 3.9f, 4.0f, 3.0f, 2.345f}, {3, 4});
  EXPECT_EQ(r.params.scale(), 0.015686275f);
  EXPECT_EQ(r.params.zero_point(), 0);
  EXPECT_EQ(r.y,
            (std::vector<std::uint8_t>{64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149}));
}

TEST(DynamicQuantize, ConstantEmptyAndNonFinite) {
  auto r = run({0, 0, 0});
  EXPECT_EQ(r.params.scale(), 1.0f);
  EXPECT_EQ(r.params.zero_point(), 0);
  EXPECT_EQ(r.y, (std::vector<std::uint8_t>{0, 0, 0}));
  r = run({5, 5});
  EXPECT_EQ(r.params.scale(), 5.0f / 255.0f);
  EXPECT_EQ(r.y, (std::vector<std::uint8_t>{255, 255}));
  r = run({-5});
  EXPECT_EQ(r.params.zero_point(), 255);
  EXPECT_EQ(r.y, (std::vector<std::uint8_t>{0}));
  const auto e = dynamic_quantize_linear(DynamicQuantizeDesc{{0}}, nullptr, nullptr);
  EXPECT_EQ(e.scale(), 1.0f);
  EXPECT_EQ(e.zero_point(), 0);
  // Scalar (rank 0) tensor.
  r = run({2.0f}, Shape{});
  EXPECT_EQ(r.y, (std::vector<std::uint8_t>{255}));
  // NaN takes no part in the range and quantizes to the zero point.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  r = run({nan, 1.0f, -1.0f});
  const auto ref = reference::params_from_range(DType::uint8, Mapping::affine, -1.0f, 1.0f);
  EXPECT_EQ(r.params, ref);
  EXPECT_EQ(r.y[0], ref.zero_point());
  r = run({nan, nan});
  EXPECT_EQ(r.params.scale(), 1.0f);
  // Tiny values: the scale may not underflow to 0.
  r = run({1e-44f, -1e-44f});
  EXPECT_GT(r.params.scale(), 0.0f);
  std::vector<std::uint8_t> y(2);
  const std::vector<float> inf = {1.0f, -std::numeric_limits<float>::infinity()};
  EXPECT_QFORGE_ERROR(dynamic_quantize_linear(DynamicQuantizeDesc{{2}}, inf.data(), y.data()),
                      ErrorCode::invalid_argument, "x[1] = -inf; expected finite values");
  EXPECT_QFORGE_ERROR(dynamic_quantize_linear(DynamicQuantizeDesc{{2}}, nullptr, y.data()),
                      ErrorCode::invalid_argument, "x is null");
}

TEST(DynamicQuantize, RandomAgreesWithParamsFromRange) {
  QFORGE_SEEDED_RNG(rng);
  for (int iter = 0; iter < 300; ++iter) {
    const auto n = static_cast<std::size_t>(test::uniform_int(rng, 1, 300));
    const float span = std::ldexp(1.0f, static_cast<int>(test::uniform_int(rng, -20, 20)));
    const float shift = test::uniform(rng, -1.0f, 1.0f) * span;
    std::vector<float> x(n);
    for (auto& v : x) v = test::uniform(rng, -span, span) + shift;
    const auto r = run(x);
    const float lo = *std::min_element(x.begin(), x.end()),
                hi = *std::max_element(x.begin(), x.end());
    const auto p = reference::params_from_range(DType::uint8, Mapping::affine, lo, hi);
    ASSERT_EQ(r.params, p);
    // Independent formulas in float32 (ONNX reference implementation).
    const float mx = std::max(0.0f, hi), mn = std::min(0.0f, lo);
    const float s = (mx - mn) / 255.0f;
    ASSERT_EQ(r.params.scale(), s);
    ASSERT_EQ(r.params.zero_point(),
              std::clamp(static_cast<int>(std::nearbyint(0.0f - mn / s)), 0, 255));
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(r.y[i], std::clamp(std::nearbyint(x[i] / s) + r.params.zero_point(), 0.0f, 255.0f))
          << i;
  }
}

}  // namespace
}  // namespace qforge
