// GPTQ rounding (qforge/model/gptq.h) on random weights and inputs: the layer's output error on
// the calibration inputs is no larger than round-to-nearest's (printed per case); the rounded
// values are codes of the returned ranges' params, inside the dtype's range; the Hessian sum
// and the factor match plain loops; a dead input rounds to nearest; a singular H, an empty one,
// a non-finite one and mismatched sizes.
#include "qforge/model/gptq.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "test_support.h"

namespace qforge::model {
namespace {

// [m, k] inputs with correlated, unevenly scaled columns (as a layer's inputs are): x = z A with
// z standard normal and A random, then a per-column scale from 0.1 to 3.
std::vector<float> correlated_inputs(std::mt19937_64& g, std::int64_t m, std::int64_t k) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(static_cast<std::size_t>(k * k)), scale(static_cast<std::size_t>(k));
  for (float& v : a) v = normal(g) / std::sqrt(static_cast<float>(k));
  for (std::int64_t j = 0; j < k; ++j) a[static_cast<std::size_t>(j * k + j)] += 1.0f;
  for (float& s : scale) s = test::random_values(g, 1, 0.1f, 3.0f)[0];
  std::vector<float> z(static_cast<std::size_t>(m * k)), x(z.size());
  for (float& v : z) v = normal(g);
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t j = 0; j < k; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p)
        sum +=
            double(z[static_cast<std::size_t>(r * k + p)]) * a[static_cast<std::size_t>(p * k + j)];
      x[static_cast<std::size_t>(r * k + j)] =
          static_cast<float>(sum) * scale[static_cast<std::size_t>(j)];
    }
  return x;
}

std::vector<float> normal_weights(std::mt19937_64& g, std::int64_t n, std::int64_t k) {
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(static_cast<std::size_t>(n * k));
  for (float& v : w) v = normal(g);
  return w;
}

HessianAccumulator hessian(std::span<const float> x, std::int64_t k) {
  HessianAccumulator h(k);
  h.add(x);
  return h;
}

WeightRange observed(const WeightQuantization& rule, std::span<const float> v) {
  return rule.observer == calibration::Method::mse ? mse_range(rule.dtype, rule.mapping, v)
                                                   : minmax_range(v);
}

// Round-to-nearest of [n, k] `w` as quantize_weight does it: each group's range by the observer,
// params_from_range, reference quantize and dequantize.
std::vector<float> nearest(const WeightQuantization& rule, std::span<const float> w, std::int64_t n,
                           std::int64_t k) {
  const std::int64_t group = rule.granularity == Granularity::block         ? rule.block_size
                             : rule.granularity == Granularity::per_channel ? k
                                                                            : n * k;
  std::vector<float> out(w.begin(), w.end());
  for (std::int64_t r = 0; r < (rule.granularity == Granularity::per_tensor ? 1 : n); ++r)
    for (std::int64_t b = 0; b < (rule.granularity == Granularity::per_tensor ? 1 : k);
         b += group) {
      const std::int64_t begin = rule.granularity == Granularity::per_tensor ? 0 : r * k + b;
      const std::int64_t size =
          rule.granularity == Granularity::per_tensor ? n * k : std::min(group, k - b);
      const auto values =
          w.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(size));
      const WeightRange range = observed(rule, values);
      const QuantizationParams p =
          reference::params_from_range(rule.dtype, rule.mapping, range.lo, range.hi);
      for (std::int64_t i = 0; i < size; ++i) {
        const std::int32_t q = reference::quantize_value(
            values[static_cast<std::size_t>(i)], p.scale(), p.zero_point(), p.qmin(), p.qmax());
        out[static_cast<std::size_t>(begin + i)] =
            reference::dequantize_value(q, p.scale(), p.zero_point());
      }
    }
  return out;
}

// ||x w^T - x v^T||^2 for [m, k] x and [n, k] w, v.
double output_error(std::span<const float> x, std::span<const float> w, std::span<const float> v,
                    std::int64_t m, std::int64_t n, std::int64_t k) {
  double sum = 0;
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t c = 0; c < n; ++c) {
      double d = 0;
      for (std::int64_t j = 0; j < k; ++j)
        d += double(x[static_cast<std::size_t>(r * k + j)]) *
             (double(w[static_cast<std::size_t>(c * k + j)]) -
              v[static_cast<std::size_t>(c * k + j)]);
      sum += d * d;
    }
  return sum;
}

// The ranges' params as quantize_weight builds them; every rounded value must be a code of
// them, inside [qmin, qmax] without clamping, that dequantizes to exactly itself.
void expect_codes_of_ranges(const WeightQuantization& rule, std::span<const float> rounded,
                            const std::vector<WeightRange>& ranges, std::int64_t n,
                            std::int64_t k) {
  std::vector<float> lo, hi;
  for (const WeightRange& r : ranges) {
    lo.push_back(r.lo);
    hi.push_back(r.hi);
  }
  Scheme scheme{.mapping = rule.mapping, .granularity = rule.granularity};
  if (rule.granularity == Granularity::per_channel) scheme.axis = 0;
  if (rule.granularity == Granularity::block) scheme.block_size = rule.block_size;
  const QuantizationParams p =
      rule.granularity == Granularity::per_tensor
          ? reference::params_from_range(rule.dtype, rule.mapping, lo[0], hi[0])
          : reference::params_from_ranges(rule.dtype, scheme, lo, hi);
  const std::int64_t blocks =
      rule.granularity == Granularity::block ? (k + rule.block_size - 1) / rule.block_size : 1;
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t j = 0; j < k; ++j) {
      const std::size_t group = rule.granularity == Granularity::per_tensor ? 0
                                : rule.granularity == Granularity::per_channel
                                    ? static_cast<std::size_t>(r)
                                    : static_cast<std::size_t>(r * blocks + j / rule.block_size);
      const float s = p.scale(group);
      const std::int32_t z = p.zero_point(group);
      const float v = rounded[static_cast<std::size_t>(r * k + j)];
      const double unclamped = std::nearbyint(double(v) / s) + z;
      ASSERT_GE(unclamped, p.qmin()) << "(" << r << ", " << j << ")";
      ASSERT_LE(unclamped, p.qmax()) << "(" << r << ", " << j << ")";
      const std::int32_t q = reference::quantize_value(v, s, z, p.qmin(), p.qmax());
      ASSERT_EQ(reference::dequantize_value(q, s, z), v) << "(" << r << ", " << j << ")";
    }
}

struct Case {
  const char* name;
  WeightQuantization rule;
};

std::vector<Case> cases() {
  WeightQuantization b32{.dtype = DType::int4,
                         .mapping = Mapping::affine,
                         .granularity = Granularity::block,
                         .block_size = 32};
  WeightQuantization b32_mse = b32;
  b32_mse.observer = calibration::Method::mse;
  WeightQuantization b16_sym = b32;
  b16_sym.mapping = Mapping::symmetric;
  b16_sym.block_size = 16;
  WeightQuantization int4_channel{
      .dtype = DType::int4, .mapping = Mapping::affine, .granularity = Granularity::per_channel};
  WeightQuantization int8_channel{
      .dtype = DType::int8, .mapping = Mapping::symmetric, .granularity = Granularity::per_channel};
  WeightQuantization int4_tensor{
      .dtype = DType::int4, .mapping = Mapping::symmetric, .granularity = Granularity::per_tensor};
  return {{"int4 affine block 32", b32},
          {"int4 affine block 32 mse", b32_mse},
          {"int4 symmetric block 16", b16_sym},
          {"int4 affine per channel", int4_channel},
          {"int8 symmetric per channel", int8_channel},
          {"int4 symmetric per tensor", int4_tensor}};
}

TEST(Gptq, OutputErrorIsNoLargerThanNearestOnTheCalibrationInputs) {
  SCOPED_TRACE(test::seed_text());
  for (int trial = 0; trial < 4; ++trial) {
    auto g = test::rng(700 + trial);
    // K not a multiple of the block (a short last block), more rows than K.
    const std::int64_t m = 300, k = 112 + 8 * trial, n = 24;
    const std::vector<float> x = correlated_inputs(g, m, k);
    const std::vector<float> w = normal_weights(g, n, k);
    const GptqFactor f = gptq_factor(hessian(x, k));
    for (const Case& c : cases()) {
      SCOPED_TRACE(std::string(c.name) + ", trial " + std::to_string(trial));
      std::vector<float> rounded = w;
      const auto ranges = gptq_round(c.rule, rounded, n, k, f);
      expect_codes_of_ranges(c.rule, rounded, ranges, n, k);
      const double gptq = output_error(x, w, rounded, m, n, k);
      const double plain = output_error(x, w, nearest(c.rule, w, n, k), m, n, k);
      std::printf("  trial %d K=%3lld %-28s output error: nearest %.5g, gptq %.5g (%.3f)\n", trial,
                  static_cast<long long>(k), c.name, plain, gptq, gptq / plain);
      EXPECT_LE(gptq, plain);
    }
  }
}

TEST(Gptq, HessianSumMatchesAPlainLoopWhateverTheBatches) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(710);
  const std::int64_t k = 37, m = 50;
  const std::vector<float> x = test::random_values(g, static_cast<std::size_t>(m * k));
  HessianAccumulator whole(k), split(k);
  whole.add(x);
  split.add(std::span<const float>(x).first(static_cast<std::size_t>(13 * k)));
  split.add(std::span<const float>(x).first(0));
  split.add(std::span<const float>(x).subspan(static_cast<std::size_t>(13 * k)));
  EXPECT_EQ(whole.rows(), m);
  EXPECT_EQ(split.rows(), m);
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < k; ++j) {
      double want = 0;
      for (std::int64_t r = 0; r < m; ++r)
        want +=
            double(x[static_cast<std::size_t>(r * k + i)]) * x[static_cast<std::size_t>(r * k + j)];
      const auto at = static_cast<std::size_t>(i * k + j);
      if (j < i) {
        EXPECT_EQ(whole.upper()[at], 0.0);
        continue;
      }
      EXPECT_NEAR(whole.upper()[at], want, 1e-4 * m);
      EXPECT_NEAR(split.upper()[at], want, 1e-4 * m);
    }
  try {
    whole.add(std::span<const float>(x).first(static_cast<std::size_t>(k + 1)));
    ADD_FAILURE() << "accepted a partial row";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("K = 37"), std::string::npos) << e.what();
  }
}

TEST(Gptq, FactorIsTheCholeskyFactorOfTheDampedInverse) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(711);
  const std::int64_t k = 45;
  const HessianAccumulator h = hessian(correlated_inputs(g, 90, k), k);
  const GptqFactor f = gptq_factor(h);
  double trace = 0;
  for (std::int64_t i = 0; i < k; ++i) trace += h.upper()[static_cast<std::size_t>(i * k + i)];
  EXPECT_NEAR(f.damping, 0.01 * trace / k, 1e-12 * trace);
  EXPECT_TRUE(f.dead.empty());
  // U upper triangular with U^T U (H + d I) = I.
  const auto full = [&](std::int64_t i, std::int64_t j) {
    const double v = h.upper()[static_cast<std::size_t>(std::min(i, j) * k + std::max(i, j))];
    return i == j ? v + f.damping : v;
  };
  const auto u = [&](std::int64_t i, std::int64_t j) {
    return f.u[static_cast<std::size_t>(i * k + j)];
  };
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < i; ++j) ASSERT_EQ(u(i, j), 0.0);
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < k; ++j) {
      double v = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        double inverse = 0;  // (U^T U)[i, p]
        for (std::int64_t q = 0; q <= std::min(i, p); ++q) inverse += u(q, i) * u(q, p);
        v += inverse * full(p, j);
      }
      ASSERT_NEAR(v, i == j ? 1.0 : 0.0, 1e-8) << "(" << i << ", " << j << ")";
    }
}

TEST(Gptq, DeadInputRoundsToNearestAndSpreadsNothing) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(712);
  const std::int64_t m = 200, k = 64, n = 16, dead = 5;
  std::vector<float> x = correlated_inputs(g, m, k);
  for (std::int64_t r = 0; r < m; ++r) x[static_cast<std::size_t>(r * k + dead)] = 0.0f;
  const GptqFactor f = gptq_factor(hessian(x, k));
  ASSERT_EQ(f.dead, std::vector<std::int64_t>{dead});
  for (std::int64_t j = 0; j < k; ++j) {
    if (j == dead) continue;
    EXPECT_EQ(f.u[static_cast<std::size_t>(dead * k + j)], 0.0) << j;
    EXPECT_EQ(f.u[static_cast<std::size_t>(j * k + dead)], 0.0) << j;
  }
  const WeightQuantization rule{
      .dtype = DType::int8, .mapping = Mapping::symmetric, .granularity = Granularity::per_channel};
  const std::vector<float> w = normal_weights(g, n, k);
  std::vector<float> rounded = w;
  const auto ranges = gptq_round(rule, rounded, n, k, f);
  expect_codes_of_ranges(rule, rounded, ranges, n, k);
  const std::vector<float> plain = nearest(rule, w, n, k);
  for (std::int64_t r = 0; r < n; ++r)
    EXPECT_EQ(rounded[static_cast<std::size_t>(r * k + dead)],
              plain[static_cast<std::size_t>(r * k + dead)])
        << r;
  EXPECT_LE(output_error(x, w, rounded, m, n, k), output_error(x, w, plain, m, n, k));
}

TEST(Gptq, SingularAndEmptyHessians) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(713);
  const std::int64_t k = 64, n = 12;
  const WeightQuantization rule{.dtype = DType::int4,
                                .mapping = Mapping::affine,
                                .granularity = Granularity::block,
                                .block_size = 32};
  const std::vector<float> w = normal_weights(g, n, k);
  // Rank 8 with two identical columns: singular, dampening makes it definite.
  const std::int64_t m = 8;
  std::vector<float> x = correlated_inputs(g, m, k);
  for (std::int64_t r = 0; r < m; ++r)
    x[static_cast<std::size_t>(r * k + 9)] = x[static_cast<std::size_t>(r * k + 3)];
  const GptqFactor singular = gptq_factor(hessian(x, k));
  std::vector<float> rounded = w;
  auto ranges = gptq_round(rule, rounded, n, k, singular);
  expect_codes_of_ranges(rule, rounded, ranges, n, k);
  const double gptq = output_error(x, w, rounded, m, n, k);
  const double plain = output_error(x, w, nearest(rule, w, n, k), m, n, k);
  std::printf("  rank-8 H, K=64: output error nearest %.5g, gptq %.5g\n", plain, gptq);
  EXPECT_LE(gptq, plain);

  // No rows at all: every input is dead, so GPTQ is round-to-nearest.
  const GptqFactor empty = gptq_factor(HessianAccumulator(k));
  EXPECT_EQ(empty.dead.size(), static_cast<std::size_t>(k));
  rounded = w;
  ranges = gptq_round(rule, rounded, n, k, empty);
  EXPECT_EQ(rounded, nearest(rule, w, n, k));

  // Without dampening a rank-8 H is not definite: the dampening grows until it is.
  const GptqFactor undamped = gptq_factor(hessian(x, k), {.damping = 0.0});
  EXPECT_GT(undamped.damping, 0.0);
}

TEST(Gptq, RefusesNonFiniteAndMismatchedInput) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(714);
  const std::int64_t k = 16;
  std::vector<float> x = test::random_values(g, static_cast<std::size_t>(4 * k));
  x[7] = std::nanf("");
  const auto expect_invalid = [](const auto& call, const std::string& text) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_invalid([&] { gptq_factor(hessian(x, k)); }, "non-finite");
  expect_invalid([&] { gptq_factor(std::vector<double>(10), 4, 1); }, "expected K x K");
  expect_invalid([&] { gptq_factor(HessianAccumulator(k), {.damping = -1}); }, "damping");
  const GptqFactor f = gptq_factor(HessianAccumulator(k));
  const WeightQuantization rule{.dtype = DType::int4, .granularity = Granularity::per_channel};
  std::vector<float> w(static_cast<std::size_t>(3 * (k + 1)));
  expect_invalid([&] { gptq_round(rule, w, 3, k + 1, f); }, "the factor is for K = 16");
  expect_invalid([&] { gptq_round(rule, w, 2, k, f); }, "expected N x K");
  w.resize(static_cast<std::size_t>(3 * k));
  w[4] = INFINITY;
  expect_invalid([&] { gptq_round(rule, w, 3, k, f); }, "non-finite");
}

}  // namespace
}  // namespace qforge::model
