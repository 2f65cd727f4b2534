// Histogram methods on distributions with known answers, fresh random data each run (the seed is
// printed on failure): uniform, Gaussian and Laplace with outliers, plus the edge histograms
// (a single distinct value, a huge outlier, only negative values). "Quantization MSE" is measured
// on the data itself with core's reference quantizer.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "qforge/calibration/histogram_observer.h"
#include "qforge/calibration/minmax.h"
#include "test_support.h"

namespace qforge::calibration {
namespace {

constexpr std::size_t kN = std::size_t{1} << 20;

struct Outcome {
  Range range;
  double mse;  // on the data
};

Outcome run(const HistogramObserver& obs, const std::vector<float>& x, const Target& t, Method m) {
  MethodOptions o = obs.method();
  o.method = m;
  const Range r = obs.ranges(t, o)[0];
  return {r, test::data_mse(x, obs.params(t, o))};
}

HistogramObserver observe_in_batches(const std::vector<float>& x) {
  HistogramObserver obs;
  // Several batches, so range growth and re-binning take part.
  const std::size_t step = x.size() / 4;
  for (std::size_t at = 0; at < x.size(); at += step)
    obs.observe(std::span(x).subspan(at, std::min(step, x.size() - at)));
  return obs;
}

TEST(Distributions, UniformKeepsTheWholeRange) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(51);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(kN);
  for (float& v : x) v = u(gen);
  const auto obs = observe_in_batches(x);
  const Target t{DType::int8, Mapping::symmetric};
  const Outcome minmax = run(obs, x, t, Method::minmax);
  // |x| is uniform on [0, 1]: its 99.99th percentile is 0.9999.
  EXPECT_NEAR(run(obs, x, t, Method::percentile).range.hi, 0.9999, 2e-3);
  // Nothing to clip: entropy and MSE stay near the max and cost at most a little more.
  for (Method m : {Method::entropy, Method::mse}) {
    const Outcome o = run(obs, x, t, m);
    EXPECT_GT(o.range.hi, 0.9f) << to_string(m);
    EXPECT_LT(o.mse, 1.1 * minmax.mse) << to_string(m);
  }
}

TEST(Distributions, GaussianClipsTheTailsAndBeatsMinMax) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(52);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(kN);
  for (float& v : x) v = g(gen);
  const auto obs = observe_in_batches(x);
  const Target t{DType::int8, Mapping::symmetric};
  const Outcome minmax = run(obs, x, t, Method::minmax);
  // P(|x| > 3.8906) = 1e-4 for a standard normal.
  const Outcome pct = run(obs, x, t, Method::percentile);
  EXPECT_NEAR(pct.range.hi, 3.8906, 0.1);
  // The MSE-optimal clip of a Gaussian for 8 bits is about 3.9 sigma.
  const Outcome mse = run(obs, x, t, Method::mse);
  EXPECT_NEAR(mse.range.hi, 3.9, 0.25);
  for (Method m : {Method::percentile, Method::mse, Method::adaptive}) {
    const Outcome o = run(obs, x, t, m);
    EXPECT_LT(o.range.hi, minmax.range.hi) << to_string(m);
    EXPECT_LT(o.mse, minmax.mse) << to_string(m) << " T=" << o.range.hi;
  }
  // Entropy (NVIDIA's KL search) lands between 4.3 and 4.6 sigma for 2^20 samples, and at times
  // on the max itself: the sparse tail's bins, one value each, are matched exactly by Q, so
  // clipping them buys little divergence. It never does worse than min-max.
  const Outcome ent = run(obs, x, t, Method::entropy);
  EXPECT_GT(ent.range.hi, 3.5f);
  EXPECT_LE(ent.mse, minmax.mse);
}

TEST(Distributions, LaplaceWithOutliersClipsTheOutliers) {
  // Laplace(0, 1) bulk (max about 14 for 2^20 samples) and one outlier on each side at 40..80.
  // Clipping k outliers of size M costs about k M^2 / N of squared error; min-max pays
  // M^2 / (12 L^2) for L levels over the range instead, so clipping wins only while
  // k < N / (12 L^2) per unit of M^2: about 1.3 for affine int8 at N = 2^20. Two outliers of
  // opposite signs double the affine range, which keeps every target well inside that bound.
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(53);
  std::exponential_distribution<float> e(1.0f);
  std::uniform_real_distribution<float> outlier(40.0f, 80.0f);
  std::vector<float> x(kN);
  for (float& v : x) v = (gen() & 1 ? 1.0f : -1.0f) * e(gen);
  const std::size_t at = gen() % (kN - 1);
  x[at] = outlier(gen);
  x[at + 1] = -outlier(gen);
  const auto obs = observe_in_batches(x);
  for (Target t : {Target{DType::int8, Mapping::symmetric}, Target{DType::int8, Mapping::affine},
                   Target{DType::uint8, Mapping::affine}, Target{DType::int4, Mapping::affine}}) {
    SCOPED_TRACE(std::string(name(t.dtype)) + " " + std::string(to_string(t.mapping)));
    const Outcome minmax = run(obs, x, t, Method::minmax);
    ASSERT_GE(std::max(-minmax.range.lo, minmax.range.hi), 40.0f);
    for (Method m : {Method::percentile, Method::entropy, Method::mse, Method::adaptive}) {
      const Outcome o = run(obs, x, t, m);
      EXPECT_LT(std::max(-o.range.lo, o.range.hi), 30.0f) << to_string(m) << " keeps an outlier";
      EXPECT_LT(o.mse, minmax.mse) << to_string(m);
    }
  }
}

TEST(Distributions, SingleDistinctValue) {
  for (float c : {3.0f, -2.5f, 0.0f}) {
    SCOPED_TRACE(c);
    HistogramObserver obs;
    obs.observe(std::vector<float>(10000, c));
    for (Method m :
         {Method::minmax, Method::percentile, Method::entropy, Method::mse, Method::adaptive}) {
      for (Target t :
           {Target{DType::int8, Mapping::symmetric}, Target{DType::uint8, Mapping::affine},
            Target{DType::int4, Mapping::affine}}) {
        MethodOptions o{m};
        const auto p = obs.params(t, o);
        ASSERT_TRUE(std::isfinite(p.scale()) && p.scale() > 0.0f) << to_string(m);
        // The threshold is the value itself (to one bin) and the value survives quantization.
        const Range r = obs.ranges(t, o)[0];
        EXPECT_NEAR(std::max(-r.lo, r.hi), std::fabs(c), std::fabs(c) / 2048 + 1e-7)
            << to_string(m);
        const std::vector<float> one = {c};
        EXPECT_LE(std::sqrt(test::data_mse(one, p)), std::fabs(c) / 1000 + 1e-6) << to_string(m);
      }
    }
  }
}

TEST(Distributions, HugeOutlier) {
  // A bulk N(0, 1) and one value at 1e4: the bulk falls in the first bins of a 2048-bin
  // histogram (w = 4.9). Percentile (interpolated) clips the outlier and keeps the bulk's scale;
  // entropy and MSE search from bin 128 (T >= 625) and, by squared error, keeping one value of
  // 1e4 (error 1e8 if clipped) beats zeroing the bulk (error ~1e6): they keep it. Every method
  // gives finite, valid params, and adaptive picks the least expected error.
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(54);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(1 << 18);
  for (float& v : x) v = g(gen);
  x[12345] = 1e4f;
  HistogramObserver obs;
  obs.observe(x);
  const Target t{DType::int8, Mapping::symmetric};
  const Outcome pct = run(obs, x, t, Method::percentile);
  EXPECT_LT(pct.range.hi, 10.0f);
  EXPECT_GT(pct.range.hi, 2.0f);
  for (Method m : {Method::minmax, Method::entropy, Method::mse, Method::adaptive}) {
    const Outcome o = run(obs, x, t, m);
    EXPECT_TRUE(std::isfinite(o.range.hi) && o.range.hi > 0.0f && o.range.hi <= 1e4f);
  }
  const auto a = obs.adaptive(t).channels.at(0);
  ASSERT_EQ(a.scores.size(), 4u);
  for (const auto& s : a.scores) {
    if (s.method == a.chosen) {
      EXPECT_EQ(s.range, a.range);
    }
    EXPECT_LE(a.scores[static_cast<std::size_t>(a.chosen)].mse, s.mse) << to_string(s.method);
  }
  // With NVIDIA's left bin edge, the percentile falls in bin 0 and the threshold is 0: the
  // reason qforge interpolates by default.
  MethodOptions left{Method::percentile};
  left.percentile_interpolate = false;
  EXPECT_EQ(obs.ranges(t, left)[0].hi, 0.0f);
  EXPECT_EQ(obs.params(t, left).scale(), 1.0f);  // still valid params
}

TEST(Distributions, OnlyNegativeValues) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(55);
  std::uniform_real_distribution<float> u(-5.0f, -1.0f);
  std::vector<float> x(1 << 18);
  for (float& v : x) v = u(gen);
  HistogramObserver obs;
  obs.observe(x);
  for (Method m : {Method::percentile, Method::entropy, Method::mse, Method::adaptive}) {
    SCOPED_TRACE(to_string(m));
    MethodOptions o{m};
    const Range r = obs.ranges({DType::int8, Mapping::affine}, o)[0];
    EXPECT_GT(r.lo, -5.01f);
    EXPECT_LT(r.lo, -4.9f);
    EXPECT_LE(r.hi, -1.0f);
    // Affine int8 spends all 256 levels on [T, 0]: zero point at the top of the range.
    const auto p = obs.params({DType::int8, Mapping::affine}, o);
    EXPECT_EQ(p.zero_point(), 127);
    EXPECT_LT(p.scale(), 5.01f / 255.0f + 1e-6f);
    EXPECT_LT(
        test::data_mse(x, p),
        1.1 * test::data_mse(x, obs.params({DType::int8, Mapping::affine}, {Method::minmax})));
  }
}

TEST(Distributions, EveryDtypeMappingAndConventionGivesValidParams) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(56);
  std::normal_distribution<float> g(0.5f, 2.0f);
  std::vector<float> x(20000);
  for (float& v : x) v = g(gen);
  HistogramObserver obs;
  obs.observe(x);
  for (DType d : {DType::int8, DType::uint8, DType::int16, DType::uint16, DType::int4, DType::uint4,
                  DType::binary}) {
    for (Mapping mp : {Mapping::affine, Mapping::symmetric}) {
      for (Convention c : {Convention::qforge, Convention::pytorch}) {
        if (d == DType::binary && (mp == Mapping::affine || c == Convention::pytorch)) continue;
        for (Method m :
             {Method::minmax, Method::percentile, Method::entropy, Method::mse, Method::adaptive}) {
          SCOPED_TRACE(std::string(name(d)) + " " + std::string(to_string(mp)) + " " +
                       std::string(to_string(m)));
          const Target t{d, mp, c};
          const auto p = obs.params(t, {m});
          EXPECT_TRUE(std::isfinite(p.scale()) && p.scale() > 0.0f);
          // MSE minimises an estimate of the data's error: never much worse than min-max.
          if (m == Method::mse && d != DType::binary) {
            EXPECT_LE(test::data_mse(x, p),
                      1.05 * test::data_mse(x, obs.params(t, {Method::minmax})));
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace qforge::calibration
