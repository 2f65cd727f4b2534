// Histogram collection: bins against a naive loop (both the small-batch and the interleaved
// large-batch paths), re-binning on range growth by hand, no counts lost, and bad state.
#include "qforge/calibration/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "qforge/error.h"
#include "test_support.h"

namespace qforge::calibration {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<double> vec(std::span<const double> s) { return {s.begin(), s.end()}; }

// The documented binning: |x| bin min(floor(|x| * (bins / A) as float), bins - 1) of its side.
void naive_add(std::vector<double>& neg, std::vector<double>& pos, std::span<const float> x,
               float limit) {
  const int bins = static_cast<int>(pos.size());
  const float inv =
      limit > 0.0f
          ? static_cast<float>(std::min(bins / static_cast<double>(limit), double{FLT_MAX}))
          : 0.0f;
  for (float v : x) {
    if (!std::isfinite(v)) continue;
    const float f = std::fabs(v) * inv;
    const int j = f < static_cast<float>(bins - 1) ? static_cast<int>(f) : bins - 1;
    (v >= 0.0f ? pos : neg)[static_cast<std::size_t>(j)] += 1.0;
  }
}

TEST(Histogram, HandComputedBins) {
  Histogram h(4);
  // A = 2, w = 0.5: |x| bins [0, .5) [.5, 1) [1, 1.5) [1.5, 2]; the top edge in the last bin.
  EXPECT_EQ(h.add(std::vector<float>{0.0f, -0.0f, 0.4f, -0.6f, 1.0f, -1.9f, 2.0f, -2.0f, kNaN}), 1);
  EXPECT_EQ(h.limit(), 2.0f);
  EXPECT_EQ(h.min(), -2.0f);
  EXPECT_EQ(h.max(), 2.0f);
  EXPECT_EQ(vec(h.positive()), (std::vector<double>{3, 0, 1, 1}));  // 0, -0, 0.4 | 1 | 2
  EXPECT_EQ(vec(h.negative()), (std::vector<double>{0, 1, 0, 2}));
  EXPECT_EQ(h.magnitude(), (std::vector<double>{3, 1, 1, 3}));
  EXPECT_EQ(h.total(), 8.0);
}

TEST(Histogram, GrowthRebinsWithoutLosingCounts) {
  Histogram h(4);
  h.add(std::vector<float>{0.1f, 0.3f, 0.6f, 0.9f, 1.0f});  // A = 1, w = .25: [1, 1, 1, 2]
  EXPECT_EQ(vec(h.positive()), (std::vector<double>{1, 1, 1, 2}));
  // Grow to A = 2 (w = .5): old bins pair up exactly: [2, 3, 0, 0]; then 2.0 -> bin 3.
  h.add(std::vector<float>{2.0f});
  EXPECT_EQ(vec(h.positive()), (std::vector<double>{2, 3, 0, 1}));
  // Grow to A = 3 (w = .75): old [0, .5] -> new 0; old [.5, 1] splits half into new 0
  // ([.5, .75]) and half into new 1; old [1.5, 2] -> new 2; then 3.0 -> bin 3.
  h.add(std::vector<float>{-3.0f});
  EXPECT_EQ(vec(h.positive()), (std::vector<double>{3.5, 1.5, 1, 0}));
  EXPECT_EQ(vec(h.negative()), (std::vector<double>{0, 0, 0, 1}));
  EXPECT_EQ(h.total(), 7.0);
  EXPECT_EQ(h.min(), -3.0f);
  EXPECT_EQ(h.max(), 2.0f);
}

TEST(Histogram, GrowthFromAllZeros) {
  Histogram h(8);
  h.add(std::vector<float>(5, 0.0f));
  EXPECT_EQ(h.limit(), 0.0f);
  EXPECT_EQ(h.positive()[0], 5.0);
  h.add(std::vector<float>{8.0f});
  EXPECT_EQ(h.limit(), 8.0f);
  EXPECT_EQ(h.positive()[0], 5.0);  // zeros stay at zero
  EXPECT_EQ(h.positive()[7], 1.0);
  EXPECT_EQ(h.total(), 6.0);
}

TEST(Histogram, RandomBatchesMatchNaiveBinningAndKeepTotals) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(11);
  std::normal_distribution<float> value(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  // Both paths: small batches count into doubles, large ones through 16-bit counters (up to
  // one 65536-value chunk of a first batch, which is then counted at the batch's own range).
  for (std::size_t n : {1u, 13u, 1000u, 16383u, 16384u, 65535u, 65536u}) {
    SCOPED_TRACE(n);
    Histogram h(2048);
    std::vector<float> x(n);
    std::int64_t bad = 0;
    for (float& v : x) {
      const float r = u(gen);
      v = r < 0.001f ? kNaN : r < 0.002f ? -kInf : value(gen);
      bad += std::isfinite(v) ? 0 : 1;
    }
    EXPECT_EQ(h.add(x), bad);
    std::vector<double> neg(2048, 0.0), pos(2048, 0.0);
    naive_add(neg, pos, x, h.limit());
    EXPECT_EQ(vec(h.negative()), neg);
    EXPECT_EQ(vec(h.positive()), pos);
    EXPECT_EQ(h.total(), static_cast<double>(static_cast<std::int64_t>(n) - bad));
  }
  // Many batches of growing spread: the total stays exact up to rounding.
  Histogram h;
  double count = 0;
  for (int b = 1; b <= 30; ++b) {
    std::vector<float> x(500);
    for (float& v : x) v = value(gen) * static_cast<float>(b);
    h.add(x);
    count += 500;
    EXPECT_NEAR(h.total(), count, 1e-9 * count);
    for (double c : h.positive()) ASSERT_GE(c, 0.0);
  }
}

// A first batch larger than one 65536-value chunk is read once: each chunk grows the range and
// is counted at it, so the result is that of observing the chunks as separate batches (equal up
// to the rounding of adding re-binned fractions in another order). Spreads that widen from
// chunk to chunk force a re-binning in the middle of the batch; a leading chunk of zeros (limit
// 0) or of non-finite values only, and NaN / inf inside a chunk, go through the same path.
TEST(Histogram, FirstBatchEqualsItsChunksObservedAsBatches) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(13);
  std::normal_distribution<float> value(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  constexpr std::size_t kChunk = 65536;
  enum class Lead { none, zeros, non_finite };
  for (const Lead lead : {Lead::none, Lead::zeros, Lead::non_finite})
    for (const bool widening : {false, true})
      for (const std::size_t n : {kChunk + 1, 3 * kChunk + 4321, 5 * kChunk}) {
        SCOPED_TRACE("n " + std::to_string(n) + (widening ? " widening" : "") +
                     (lead == Lead::zeros        ? " zeros first"
                      : lead == Lead::non_finite ? " NaN first"
                                                 : ""));
        std::vector<float> x(n);
        std::int64_t bad = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const std::size_t chunk = i / kChunk;
          const float spread = widening ? 1.0f + 0.5f * static_cast<float>(chunk) : 1.0f;
          const float r = u(gen);
          float v = r < 0.0005f ? kNaN : r < 0.001f ? kInf : spread * value(gen);
          if (chunk == 0 && lead == Lead::zeros) v = 0.0f;
          if (chunk == 0 && lead == Lead::non_finite) v = r < 0.5f ? kNaN : -kInf;
          x[i] = v;
          bad += std::isfinite(v) ? 0 : 1;
        }
        Histogram whole(2048), chunks(2048);
        EXPECT_EQ(whole.add(x), bad);
        std::int64_t chunk_bad = 0;
        for (std::size_t at = 0; at < n; at += kChunk)
          chunk_bad += chunks.add(std::span(x).subspan(at, std::min(kChunk, n - at)));
        EXPECT_EQ(chunk_bad, bad);
        EXPECT_EQ(whole.limit(), chunks.limit());
        EXPECT_EQ(whole.min(), chunks.min());
        EXPECT_EQ(whole.max(), chunks.max());
        EXPECT_EQ(whole.total(), static_cast<double>(static_cast<std::int64_t>(n) - bad));
        EXPECT_NEAR(whole.total(), chunks.total(), 1e-9 * whole.total());
        double max_diff = 0.0;
        for (std::size_t j = 0; j < 2048; ++j) {
          max_diff = std::max(max_diff, std::fabs(whole.positive()[j] - chunks.positive()[j]));
          max_diff = std::max(max_diff, std::fabs(whole.negative()[j] - chunks.negative()[j]));
          ASSERT_GE(whole.positive()[j], 0.0);
          ASSERT_GE(whole.negative()[j], 0.0);
        }
        EXPECT_LT(max_diff, 1e-7) << "largest bin difference";
        if (!widening && lead == Lead::none) {
          // No chunk widened after the first, or did so at most a few times; either way the counts
          // are whole numbers exactly when no re-binning happened. Check the naive binning then.
          std::vector<double> neg(2048, 0.0), pos(2048, 0.0);
          naive_add(neg, pos, x, whole.limit());
          const bool rebinned = std::any_of(whole.positive().begin(), whole.positive().end(),
                                            [](double c) { return c != std::floor(c); });
          if (!rebinned) {
            EXPECT_EQ(vec(whole.negative()), neg);
            EXPECT_EQ(vec(whole.positive()), pos);
          }
        }
      }
}

TEST(Histogram, HugeOutlierAfterABatchKeepsTheBatchInTheFirstBins) {
  Histogram h(2048);
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) / 1000.0f;
  h.add(x);
  h.add(std::vector<float>{1e6f});
  EXPECT_EQ(h.limit(), 1e6f);
  EXPECT_DOUBLE_EQ(h.positive()[0], 1000.0);  // all of [0, 1) now lies in bin 0 (w = 488)
  EXPECT_EQ(h.positive()[2047], 1.0);
}

TEST(Histogram, DenormalAndHugeLimits) {
  Histogram tiny(16);
  tiny.add(std::vector<float>{1e-44f, -1e-45f, 0.0f});
  EXPECT_EQ(tiny.total(), 3.0);
  Histogram big(16);
  big.add(std::vector<float>{FLT_MAX, -FLT_MAX, 1.0f});
  EXPECT_EQ(big.total(), 3.0);
  EXPECT_EQ(big.positive()[15], 1.0);
  EXPECT_EQ(big.negative()[15], 1.0);
}

TEST(Histogram, RejectsBadConstructionAndState) {
  EXPECT_THROW(Histogram(0), Error);
  Histogram h(4);
  EXPECT_THROW(h.grow(kInf), Error);
  EXPECT_THROW(h.grow(-1.0f), Error);
  EXPECT_NO_THROW((void)Histogram::from_parts(2, 1.0f, -1.0f, 0.5f, {1, 0}, {0, 1}));
  EXPECT_THROW((void)Histogram::from_parts(2, 1.0f, -1.0f, 0.5f, {1}, {0, 1}), Error);  // sizes
  EXPECT_THROW((void)Histogram::from_parts(2, 1.0f, -1.0f, 0.5f, {-1, 0}, {0, 1}),
               Error);  // negative
  EXPECT_THROW((void)Histogram::from_parts(2, 1.0f, -2.0f, 0.5f, {1, 0}, {0, 1}),
               Error);  // min out
  EXPECT_THROW((void)Histogram::from_parts(2, 1.0f, kInf, -kInf, {1, 0}, {0, 1}),
               Error);  // no range
  EXPECT_THROW((void)Histogram::from_parts(2, kNaN, -1.0f, 0.5f, {1, 0}, {0, 1}), Error);  // limit
  const auto empty = Histogram::from_parts(2, 0.0f, kInf, -kInf, {0, 0}, {0, 0});
  EXPECT_TRUE(empty.empty());
}

}  // namespace
}  // namespace qforge::calibration
