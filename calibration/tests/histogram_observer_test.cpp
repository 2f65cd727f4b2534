// HistogramObserver: per-channel histograms against per-tensor histograms of each channel's
// values, per-channel params against per-tensor observers, the adaptive report, and errors.
#include "qforge/calibration/histogram_observer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "qforge/calibration/minmax.h"
#include "qforge/error.h"
#include "test_support.h"

namespace qforge::calibration {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The values of channel c of a row-major tensor of `shape` along `axis`.
std::vector<float> channel_values(const std::vector<float>& x, const Shape& shape, int axis,
                                  std::int64_t c) {
  const int rank = static_cast<int>(shape.size());
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  std::int64_t inner = 1;
  for (std::size_t i = a + 1; i < shape.size(); ++i) inner *= shape[i];
  std::vector<float> out;
  for (std::size_t i = 0; i < x.size(); ++i)
    if ((static_cast<std::int64_t>(i) / inner) % shape[a] == c) out.push_back(x[i]);
  return out;
}

TEST(HistogramObserver, PerChannelEqualsPerTensorOfEachChannel) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(61);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const std::vector<std::pair<Shape, int>> cases = {
      {{6, 40}, 0}, {{6, 40}, 1}, {{3, 5, 7}, 1}, {{4, 3, 9}, -1}, {{2, 3, 2, 5}, 2}};
  for (const bool with_nan : {false, true})  // both the all-finite and the masked kernels
    for (const auto& [shape, axis] : cases) {
      SCOPED_TRACE("shape " + qforge::to_string(shape) + " axis " + std::to_string(axis) +
                   (with_nan ? " with NaN" : ""));
      auto obs = HistogramObserver::per_channel(axis, {}, 64);
      const auto channels =
          shape[static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(shape.size()) : axis)];
      std::vector<HistogramObserver> per_tensor(static_cast<std::size_t>(channels),
                                                HistogramObserver({}, 64));
      for (int batch = 0; batch < 3; ++batch) {
        std::vector<float> x(static_cast<std::size_t>(element_count(shape)));
        const float spread = 1.0f + static_cast<float>(batch);  // later batches grow the ranges
        for (float& v : x) v = with_nan && u(gen) < 0.01f ? kNaN : spread * g(gen);
        obs.observe(x, shape);
        for (std::int64_t c = 0; c < channels; ++c)
          per_tensor[static_cast<std::size_t>(c)].observe(channel_values(x, shape, axis, c));
      }
      ASSERT_EQ(obs.histograms().size(), static_cast<std::size_t>(channels));
      std::int64_t values = 0, bad = 0;
      for (std::int64_t c = 0; c < channels; ++c) {
        const auto& want = per_tensor[static_cast<std::size_t>(c)];
        const Histogram& h = obs.histograms()[static_cast<std::size_t>(c)];
        const Histogram& w = want.histograms()[0];
        EXPECT_EQ(h.limit(), w.limit());
        EXPECT_EQ(h.min(), w.min());
        EXPECT_EQ(h.max(), w.max());
        EXPECT_EQ(h.total(), w.total());
        for (int j = 0; j < 64; ++j) {
          EXPECT_NEAR(h.positive()[j], w.positive()[j], 1e-9) << "channel " << c << " bin " << j;
          EXPECT_NEAR(h.negative()[j], w.negative()[j], 1e-9) << "channel " << c << " bin " << j;
        }
        values += want.stats().values;
        bad += want.stats().non_finite;
      }
      EXPECT_EQ(obs.stats().values, values);
      EXPECT_EQ(obs.stats().non_finite, bad);
      // Per-channel params: channel c's pair is what a per-tensor observer of channel c gives.
      for (Method m : {Method::minmax, Method::percentile, Method::entropy, Method::mse}) {
        const Target t{DType::int8, Mapping::affine};
        MethodOptions o{m};
        o.start_bin = 8;
        const auto p = obs.params(t, o);
        EXPECT_EQ(p.scheme(), Scheme::per_channel_affine(axis));
        for (std::int64_t c = 0; c < channels; ++c) {
          const auto q = per_tensor[static_cast<std::size_t>(c)].params(t, o);
          EXPECT_FLOAT_EQ(p.scale(static_cast<std::size_t>(c)), q.scale())
              << to_string(m) << " channel " << c;
          EXPECT_EQ(p.zero_point(static_cast<std::size_t>(c)), q.zero_point()) << to_string(m);
        }
      }
    }
}

TEST(HistogramObserver, AdaptiveReportsEveryMethodAndPicksTheLeastError) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(62);
  std::exponential_distribution<float> e(1.0f);
  std::vector<float> x(3 * 20000);
  for (float& v : x) v = (gen() & 1 ? 1.0f : -1.0f) * e(gen);
  auto obs = HistogramObserver::per_channel(0, {Method::adaptive});
  obs.observe(x, {3, 20000});
  const Target t{DType::int4, Mapping::symmetric};
  const AdaptiveResult r = obs.adaptive(t);
  ASSERT_EQ(r.channels.size(), 3u);
  std::vector<Range> chosen;
  for (const AdaptiveChoice& c : r.channels) {
    ASSERT_EQ(c.scores.size(), 4u);
    const Method order[] = {Method::minmax, Method::percentile, Method::entropy, Method::mse};
    for (std::size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(c.scores[k].method, order[k]);
      EXPECT_GE(c.scores[k].mse, c.scores[static_cast<std::size_t>(c.chosen)].mse);
    }
    EXPECT_EQ(c.range, c.scores[static_cast<std::size_t>(c.chosen)].range);
    // For int4 the min-max range (about 11 here) wastes most of 15 levels: it never wins.
    EXPECT_NE(c.chosen, Method::minmax);
    chosen.push_back(c.range);
  }
  EXPECT_EQ(r.params, params_for_ranges(chosen, t, 0));
  EXPECT_EQ(obs.params(t), r.params);  // the observer's own method is adaptive
}

TEST(HistogramObserver, SameDataManyTargets) {
  HistogramObserver obs({Method::percentile, 99.0});
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i) / 100.0f - 2.0f;  // [-2, 7.99]
  obs.observe(x);
  const auto a = obs.params({DType::uint8, Mapping::affine});
  const auto b = obs.params({DType::int4, Mapping::symmetric});
  const auto c = obs.params({DType::int16, Mapping::affine}, {Method::minmax});
  EXPECT_EQ(a.dtype(), DType::uint8);
  EXPECT_EQ(b.scheme().mapping, Mapping::symmetric);
  EXPECT_EQ(c, reference::params_from_range(DType::int16, Mapping::affine, -2.0f, 7.99f));
  EXPECT_EQ(obs.stats().batches, 1);  // asking never observes
}

TEST(HistogramObserver, ErrorsBeforeDataAndForEmptyChannels) {
  HistogramObserver obs;
  try {
    (void)obs.params({DType::int8, Mapping::affine});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no data observed yet"), std::string::npos) << e.what();
  }
  auto pc = HistogramObserver::per_channel(1);
  pc.observe(std::vector<float>{1.0f, kNaN, 2.0f, kNaN}, {2, 2});
  try {
    (void)pc.params({DType::int8, Mapping::affine});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("channel 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)HistogramObserver({}, 0), Error);
  EXPECT_THROW((void)HistogramObserver({Method::percentile, -1.0}), Error);
  HistogramObserver ok;
  ok.observe(std::vector<float>{1.0f});
  EXPECT_THROW((void)ok.params({DType::int8, Mapping::logarithmic}, {Method::mse}), Error);
  EXPECT_NO_THROW((void)ok.params({DType::int8, Mapping::logarithmic}, {Method::percentile}));
}

}  // namespace
}  // namespace qforge::calibration

namespace qforge::calibration {
namespace {

// calibrate() observes a min-max tensor with a MinMaxObserver instead of the histogram
// observer (model/quantize/src/calibrate.cpp): both must give the same params and stats for
// every target, batch after batch. Batches below and above the histogram's one-pass threshold
// and its 64 Ki first-batch chunks; signed zeros (ReLU outputs), NaN and infinities.
TEST(MinMaxObserver, SameParamsAndStatsAsHistogramMinMax) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(67);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 99);
  const std::vector<Target> targets = {{DType::int8, Mapping::affine},
                                       {DType::uint8, Mapping::affine},
                                       {DType::int8, Mapping::symmetric},
                                       {DType::int16, Mapping::symmetric}};
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{1000}, std::size_t{20000}, std::size_t{150000}})
    for (const int kind : {0, 1, 2}) {  // normal, ReLU-like (>= 0 with zeros), with non-finite
      MethodOptions method;
      method.method = Method::minmax;
      HistogramObserver histogram(method);
      MinMaxObserver minmax;
      for (int batch = 0; batch < 4; ++batch) {
        std::vector<float> x(n);
        const float spread = 0.5f + static_cast<float>(batch);
        for (float& v : x) {
          v = spread * g(gen);
          if (kind >= 1 && v < 0.0f) v = pick(gen) < 50 ? 0.0f : -0.0f;
          if (kind == 2 && pick(gen) == 0)
            v = pick(gen) < 50 ? std::numeric_limits<float>::quiet_NaN()
                               : std::numeric_limits<float>::infinity();
        }
        histogram.observe(x);
        minmax.observe(x);
        ASSERT_EQ(histogram.stats(), minmax.stats()) << "n " << n << " kind " << kind;
        if (!minmax.has_data()) continue;
        for (const Target& t : targets)
          EXPECT_EQ(histogram.params(t), minmax.params(t))
              << "n " << n << " kind " << kind << " batch " << batch << " "
              << histogram.params(t).to_string() << " against " << minmax.params(t).to_string();
      }
    }
}

}  // namespace
}  // namespace qforge::calibration
