// Policies and budgets, with injected costs so the choices do not depend on this machine's
// timing: fastest, restricted to plugins or a device kind, with and without transfers, device
// residency, online tuning off, and a spent total budget.
#include <gtest/gtest.h>

#include "support.h"

namespace {

using namespace qforge;

// acc_good's "fast" kernel beats cpu_scalar; acc_device beats both on the op alone but pays
// 20 us to move host data.
AcceleratorOptions costed(const std::filesystem::path& cache) {
  auto o = acc_test::options(cache);
  o.test_hooks = acc_test::injected({{"cpu_scalar[0]/scalar_reference", 50e-6},
                                     {"acc_good[0]/fast", 5e-6},
                                     {"acc_good[0]/slow", 9e-6},
                                     {"acc_device[0]/only", 1e-6}},
                                    {{"acc_device[0]/only", 20e-6}});
  return o;
}

std::vector<LoadedPlugin> three() {
  return acc_test::plugins({"cpu_scalar", "acc_good", "acc_device"});
}

TEST(Policy, FastestCountsTransfersForHostData) {
  Accelerator acc(three(), costed(acc_test::scratch_dir("c") / "t.json"));
  const TuneReport r = acc.tune(acc_test::small_matmul(8));
  EXPECT_EQ(r.winner.label(), "acc_good[0]/fast");
  EXPECT_DOUBLE_EQ(r.winner_seconds, 5e-6);
  for (const auto& c : r.candidates)
    if (c.id.plugin == "acc_device") {
      EXPECT_DOUBLE_EQ(c.seconds, 21e-6);
    }
}

TEST(Policy, ExcludingTransfersLetsTheDeviceWin) {
  auto o = costed(acc_test::scratch_dir("c") / "t.json");
  o.policy.include_transfers = false;
  Accelerator acc(three(), o);
  EXPECT_EQ(acc.tune(acc_test::small_matmul(8)).winner.label(), "acc_device[0]/only");
}

TEST(Policy, DeviceResidentDataNeverPaysTransfers) {
  Accelerator acc(three(), costed(acc_test::scratch_dir("c") / "t.json"));
  Workload w = acc_test::small_matmul(8);
  w.residency = Residency::device;
  const Decision d = acc.decide(w);
  EXPECT_EQ(d.id.label(), "acc_device[0]/only");
  EXPECT_FALSE(d.ops->host_memory());
  const auto plan = d.plan(w.op);
  EXPECT_EQ(plan->backend(), "acc_device");
  EXPECT_EQ(plan->kernel(), "only");
}

TEST(Policy, RestrictingPluginsOrDeviceKind) {
  auto o = costed(acc_test::scratch_dir("c") / "t.json");
  o.policy.plugins = {"cpu_scalar"};
  Accelerator only_scalar(three(), o);
  const TuneReport r = only_scalar.tune(acc_test::small_matmul(8));
  EXPECT_EQ(r.winner.plugin, "cpu_scalar");
  EXPECT_EQ(r.candidates.size(), 1u);

  auto g = costed(acc_test::scratch_dir("g") / "t.json");
  g.policy.device_kind = "gpu";
  Accelerator gpu(three(), g);
  EXPECT_EQ(gpu.tune(acc_test::small_matmul(8)).winner.plugin, "acc_device");
}

TEST(Policy, NothingAllowedIsAnErrorSayingWhy) {
  auto o = costed(acc_test::scratch_dir("c") / "t.json");
  o.policy.device_kind = "gpu";
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), o);
  try {
    acc.tune(acc_test::small_matmul(8));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    const std::string m = e.what();
    EXPECT_NE(m.find("no plugin can run matmul_integer"), std::string::npos) << m;
    EXPECT_NE(m.find("cpu_scalar: no device of kind 'gpu'"), std::string::npos) << m;
    EXPECT_NE(m.find("acc_good: no device of kind 'gpu'"), std::string::npos) << m;
  }
}

TEST(Policy, RefusalsAreListedPerPlugin) {
  Accelerator acc(acc_test::plugins({"acc_picky"}), costed(acc_test::scratch_dir("c") / "t.json"));
  try {
    acc.tune(acc_test::small_matmul(7));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("acc_picky: acc_picky: M = 7 is odd; expected an even M"),
              std::string::npos)
        << e.what();
  }
}

TEST(Policy, OnlineTuningOffDispatchesToTheHighestScore) {
  auto o = costed(acc_test::scratch_dir("c") / "t.json");
  o.online_tuning = false;
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), o);
  const Decision d = acc.decide(acc_test::small_matmul(8));
  EXPECT_EQ(d.source, DecisionSource::fallback);
  EXPECT_EQ(d.id.label(), "acc_good[0]/fast");  // score 5 > 1, first-listed kernel
  EXPECT_EQ(acc.stats().buckets_tuned, 0u);
  EXPECT_EQ(acc.stats().fallbacks, 1u);
  EXPECT_FALSE(std::filesystem::exists(o.cache_path));  // defaults are not cached
  // An explicit tune() still measures.
  EXPECT_EQ(acc.tune(acc_test::small_matmul(8), true).source, DecisionSource::tuned);
}

TEST(Policy, ASpentTotalBudgetFallsBackWithoutMeasuring) {
  auto o = costed(acc_test::scratch_dir("c") / "t.json");
  o.budget.total_s = 0;
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), o);
  const TuneReport r = acc.tune(acc_test::small_matmul(8));
  EXPECT_EQ(r.source, DecisionSource::fallback);
  EXPECT_FALSE(r.complete);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("total tuning budget is spent"), std::string::npos);
}

TEST(Policy, AVerifiedWinnerThatWasNeverTimedIsCachedAsIncomplete) {
  // No time for timing (drawing a large workload's inputs can spend it all): the first verified
  // candidate wins and is cached, so a later process answers from the cache without probing.
  const auto cache = acc_test::scratch_dir("c") / "t.json";
  auto o = costed(cache);
  o.budget.per_workload_s = 0;
  TuneReport first;
  {
    Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), o);
    first = acc.tune(acc_test::small_matmul(8));
    EXPECT_EQ(first.source, DecisionSource::fallback);
    EXPECT_FALSE(first.complete);
    for (const auto& c : first.candidates)
      EXPECT_EQ(c.status, CandidateStatus::not_measured) << c.id.label() << ": " << c.message;
  }
  ASSERT_TRUE(std::filesystem::exists(cache));
  Accelerator again(acc_test::plugins({"cpu_scalar", "acc_good"}), costed(cache));
  const TuneReport r = again.tune(acc_test::small_matmul(8));
  EXPECT_EQ(r.source, DecisionSource::cache);
  EXPECT_EQ(r.winner, first.winner);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(again.stats().buckets_tuned, 0u);
  EXPECT_EQ(again.stats().cache_hits, 1u);
}

TEST(Policy, AnUnverifiedWinnerIsNotCached) {
  // The total budget ends before the first probe: the winner is the highest-scored candidate,
  // unverified, which must not answer for a later process.
  const auto cache = acc_test::scratch_dir("c") / "t.json";
  auto o = costed(cache);
  o.budget.total_s = 1e-9;
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), o);
  const TuneReport r = acc.tune(acc_test::small_matmul(8));
  EXPECT_EQ(r.source, DecisionSource::fallback);
  for (const auto& c : r.candidates) EXPECT_EQ(c.status, CandidateStatus::not_verified);
  EXPECT_FALSE(std::filesystem::exists(cache));
}

TEST(Policy, BudgetRunningOutKeepsTheBestSoFar) {
  // Real timing with a budget far too small for every candidate: the decision is still made,
  // from what was measured, and marked incomplete.
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.budget.per_workload_s = 0.02;
  o.tuner.min_samples = 1000;
  o.tuner.max_samples = 100000;
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), o);
  const TuneReport r = acc.tune(acc_test::small_matmul(8));
  EXPECT_FALSE(r.complete);
  EXPECT_LT(r.tuning_seconds, 1.0);
  EXPECT_FALSE(r.winner.plugin.empty());
}

TEST(Policy, EnvironmentKnobs) {
  ::setenv("QFORGE_ONLINE_TUNING", "0", 1);
  ::setenv("QFORGE_TUNING_BUDGET", "0.25", 1);
  ::setenv("QFORGE_TUNING_CACHE", "off", 1);
  ::setenv("QFORGE_TUNING_HANG", "3", 1);
  auto o = AcceleratorOptions::from_environment();
  EXPECT_DOUBLE_EQ(o.budget.hang_s, 3);
  EXPECT_FALSE(o.online_tuning);
  EXPECT_DOUBLE_EQ(o.budget.per_workload_s, 0.25);
  EXPECT_FALSE(o.use_cache);
  ::setenv("QFORGE_TUNING_BUDGET", "soon", 1);
  try {
    AcceleratorOptions::from_environment();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("QFORGE_TUNING_BUDGET = 'soon'"), std::string::npos);
  }
  ::unsetenv("QFORGE_ONLINE_TUNING");
  ::unsetenv("QFORGE_TUNING_BUDGET");
  ::unsetenv("QFORGE_TUNING_CACHE");
  ::unsetenv("QFORGE_TUNING_HANG");
}

}  // namespace
