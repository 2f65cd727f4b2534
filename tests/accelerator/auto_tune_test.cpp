// The tuner's bookkeeping with made-up costs: medians, stability, skipping, the winner.
#include <gtest/gtest.h>

#include "qforge/accelerator.h"
#include "qforge/error.h"

namespace {

using namespace qforge;

TEST(CostEstimate, MedianIgnoresOneSidedOutliers) {
  CostEstimate e;
  for (double c : {1.0, 1.0, 50.0, 1.1, 0.9, 40.0, 1.0}) e.add(c);
  EXPECT_DOUBLE_EQ(e.median(), 1.0);
  EXPECT_EQ(e.count(), 7u);
}

TEST(CostEstimate, StableOnlyAfterMinSamplesAndASettledMedian) {
  TunerSettings s;
  s.min_samples = 4;
  s.stable_checks = 2;
  s.tolerance = 0.01;
  CostEstimate e;
  e.add(1.0);
  e.add(1.0);
  e.add(1.0);
  EXPECT_FALSE(e.stable(s));  // 3 < min_samples
  e.add(1.0);
  EXPECT_TRUE(e.stable(s));
  CostEstimate moving;
  for (double c : {1.0, 2.0, 3.0, 4.0, 5.0}) moving.add(c);
  EXPECT_FALSE(moving.stable(s));
}

TEST(AutoTune, MeasuresInOrderAndPicksTheLowestMedian) {
  TunerSettings s;
  s.min_samples = 3;
  s.stable_checks = 1;
  AutoTune t(3, s);
  const double costs[3] = {5.0, 2.0, 3.0};
  int calls = 0;
  while (auto i = t.next()) {
    t.notify_cost(costs[*i] + (calls++ % 4 == 0 ? 100.0 : 0.0));  // an outlier now and then
    ASSERT_LT(calls, 100);
  }
  ASSERT_TRUE(t.best());
  EXPECT_EQ(*t.best(), 1u);
  EXPECT_DOUBLE_EQ(t.estimate(1).median(), 2.0);
}

TEST(AutoTune, SkippedCandidatesKeepTheirSamples) {
  AutoTune t(2);
  t.notify_cost(1.0);  // candidate 0, not yet stable
  t.skip();            // its budget ran out
  ASSERT_EQ(t.next(), std::optional<std::size_t>(1));
  t.skip();  // candidate 1 never measured
  EXPECT_FALSE(t.next());
  EXPECT_EQ(t.best(), std::optional<std::size_t>(0));
}

TEST(AutoTune, NoSamplesNoWinner) {
  AutoTune t(2);
  t.skip();
  t.skip();
  EXPECT_FALSE(t.best());
  EXPECT_THROW(t.notify_cost(1.0), Error);
}

TEST(AutoTune, RejectsNonsenseCosts) {
  AutoTune t(1);
  EXPECT_THROW(t.notify_cost(-1.0), Error);
  EXPECT_THROW(t.notify_cost(std::numeric_limits<double>::quiet_NaN()), Error);
}

TEST(AutoTune, MaxSamplesEndsACandidateThatNeverSettles) {
  TunerSettings s;
  s.max_samples = 10;
  s.tolerance = 0.0;
  AutoTune t(1, s);
  int n = 0;
  while (t.next()) t.notify_cost(++n);  // the median keeps moving
  EXPECT_EQ(n, 10);
}

}  // namespace
