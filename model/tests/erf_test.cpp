// Erf's polynomial evaluation (model/src/ops/fast_erf.h) against double-precision erf: a dense
// sweep over [-4.5, 4.5] with the interval edges, fresh random points, tiny and subnormal inputs,
// and the special values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "onnx_builder.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

std::vector<float> run_erf(const std::vector<float>& x) {
  const auto n = static_cast<std::int64_t>(x.size());
  OnnxBuilder m(17);
  m.input("x", F, {n});
  m.node("Erf", {"x"}, {"y"}, "erf");
  m.output("y", F, {n});
  const Executor e(import_onnx_bytes(m.bytes(), "erf"));
  const TensorMap out = e.run({{"x", Tensor::from_values<float>({n}, x)}});
  const auto y = out.at("y").values<float>();
  return {y.begin(), y.end()};
}

TEST(Erf, WithinOneUnitOfDoublePrecision) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(97);
  std::vector<float> x;
  for (int i = -450000; i <= 450000; ++i) x.push_back(static_cast<float>(i) * 1e-5f);
  for (const float edge : {0.9f, 2.0f, 3.92f})
    for (int k = -64; k <= 64; ++k) {
      const float v = edge + static_cast<float>(k) * std::numeric_limits<float>::epsilon() * edge;
      x.push_back(v);
      x.push_back(-v);
    }
  std::uniform_real_distribution<float> wide(-6.0f, 6.0f);
  for (int i = 0; i < 100000; ++i) x.push_back(wide(g));
  for (float v = 1e-3f; v > 1e-44f; v *= 0.37f) {  // tiny, then subnormal
    x.push_back(v);
    x.push_back(-v);
  }
  const std::vector<float> y = run_erf(x);
  double worst_rel = 0, worst_abs = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::erf(static_cast<double>(x[i]));
    const double err = std::fabs(y[i] - want);
    if (std::fabs(x[i]) < 0.9f) {
      // erf(x) ~ 1.128 x near 0: the error is relative there, down to the subnormal results,
      // which carry fewer bits (two of their units allowed).
      constexpr double kSubnormalUnit = std::numeric_limits<float>::denorm_min();
      const double rel = want == 0 ? err : err / std::fabs(want);
      if (std::fabs(want) >= std::numeric_limits<float>::min())
        worst_rel = std::max(worst_rel, rel);
      ASSERT_LE(err, 3e-7 * std::fabs(want) + 2 * kSubnormalUnit)
          << "erf(" << x[i] << ") = " << y[i] << ", want " << want;
    } else {
      worst_abs = std::max(worst_abs, err);
      ASSERT_LE(err, 1.2e-7) << "erf(" << x[i] << ") = " << y[i] << ", want " << want;
    }
    ASSERT_EQ(std::signbit(y[i]), std::signbit(x[i])) << "erf(" << x[i] << ")";
  }
  RecordProperty("worst_relative_below_0_9", std::to_string(worst_rel));
  RecordProperty("worst_absolute_above_0_9", std::to_string(worst_abs));
}

TEST(Erf, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> y =
      run_erf({0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 100.0f, -100.0f,
               std::numeric_limits<float>::max()});
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_TRUE(std::signbit(y[1]));
  EXPECT_EQ(y[2], 1.0f);
  EXPECT_EQ(y[3], -1.0f);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], 1.0f);
  EXPECT_EQ(y[6], -1.0f);
  EXPECT_EQ(y[7], 1.0f);
}

}  // namespace
}  // namespace qforge::model
