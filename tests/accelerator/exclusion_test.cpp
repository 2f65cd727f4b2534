// Candidates that must not win: a plugin that returns wrong results, one that throws, one that
// hangs. Each is excluded with its reason, and the workload still gets a correct decision.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "qforge/bench/suites.h"
#include "support.h"

namespace {

using namespace qforge;

const CandidateResult& result_of(const TuneReport& r, const std::string& plugin) {
  for (const auto& c : r.candidates)
    if (c.id.plugin == plugin) return c;
  throw std::runtime_error("no candidate from " + plugin + " in the report");
}

std::vector<Workload> every_op() {
  std::vector<Workload> w;
  for (const auto& n : quick_suite()) {
    Workload small = n.workload;
    // The suite's shapes are for timing; verification only needs the op, types and schemes.
    w.push_back(small);
  }
  return w;
}

TEST(Exclusion, ALyingPluginIsExcludedForEveryOp) {
  const auto dir = acc_test::scratch_dir("cache");
  auto o = acc_test::options(dir / "tuning.json");
  // The liar would win on cost: only verification can keep it out.
  o.test_hooks =
      acc_test::injected({{"acc_liar[0]/only", 1e-6}, {"cpu_scalar[0]/scalar_reference", 1.0}});
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_liar"}), o);
  for (const auto& w : every_op()) {
    SCOPED_TRACE(describe(w.op));
    const TuneReport r = acc.tune(w);
    const auto& liar = result_of(r, "acc_liar");
    EXPECT_EQ(liar.status, CandidateStatus::wrong_result) << liar.message;
    EXPECT_TRUE(liar.message.find("differs from the reference") != std::string::npos ||
                liar.message.find("NMSE") != std::string::npos ||
                liar.message.find("returned params") != std::string::npos)
        << liar.message;
    EXPECT_EQ(r.winner.plugin, "cpu_scalar");
    EXPECT_EQ(r.source, DecisionSource::tuned);
  }
}

TEST(Exclusion, AThrowingPluginIsExcludedWithItsMessage) {
  const auto dir = acc_test::scratch_dir("cache");
  auto o = acc_test::options(dir / "tuning.json");
  o.test_hooks = acc_test::injected({{"acc_thrower[0]/only", 1e-6}});
  Accelerator acc(acc_test::plugins({"acc_thrower", "cpu_scalar"}), o);
  const TuneReport r = acc.tune(acc_test::small_matmul(8));
  const auto& t = result_of(r, "acc_thrower");
  EXPECT_EQ(t.status, CandidateStatus::threw);
  EXPECT_NE(t.message.find("acc_thrower: simulated driver fault 7"), std::string::npos)
      << t.message;
  EXPECT_EQ(r.winner.plugin, "cpu_scalar");
}

TEST(Exclusion, NoCorrectCandidateIsAnErrorNamingEach) {
  const auto dir = acc_test::scratch_dir("cache");
  Accelerator acc(acc_test::plugins({"acc_thrower", "acc_liar"}),
                  acc_test::options(dir / "tuning.json"));
  try {
    acc.tune(acc_test::small_matmul(8));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    const std::string m = e.what();
    EXPECT_NE(m.find("acc_thrower[0]/only: threw"), std::string::npos) << m;
    EXPECT_NE(m.find("acc_liar[0]/only: wrong_result"), std::string::npos) << m;
  }
}

TEST(Exclusion, AHangingPluginIsAbandonedAfterHangSecondsAndQuarantined) {
  ::setenv("QFORGE_ACC_FIXTURE_HANG_MS", "2500", 1);
  const auto dir = acc_test::scratch_dir("cache");
  auto o = acc_test::options(dir / "tuning.json");
  o.budget.hang_s = 0.3;
  Accelerator acc(acc_test::plugins({"acc_hang", "cpu_scalar"}), o);
  const auto start = std::chrono::steady_clock::now();
  const TuneReport r = acc.tune(acc_test::small_matmul(8));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Bounded by hang_s plus cpu_scalar's own tuning, far below the 2.5 s the plugin sleeps.
  EXPECT_LT(took, 0.3 + 1.0);
  const auto& h = result_of(r, "acc_hang");
  EXPECT_EQ(h.status, CandidateStatus::timed_out) << h.message;
  EXPECT_NE(h.message.find("did not return within 0.3 s"), std::string::npos) << h.message;
  EXPECT_EQ(r.winner.plugin, "cpu_scalar");
  ASSERT_EQ(acc.quarantined().size(), 1u);
  EXPECT_NE(acc.quarantined()[0].find("acc_hang"), std::string::npos);

  // It is never called again: the next workload does not wait for it.
  const auto again = std::chrono::steady_clock::now();
  const TuneReport r2 = acc.tune(acc_test::small_matmul(64));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - again).count(), 1.0);
  EXPECT_EQ(r2.winner.plugin, "cpu_scalar");
  for (const auto& c : r2.candidates) EXPECT_NE(c.id.plugin, "acc_hang");
  bool noted = false;
  for (const auto& n : r2.notes)
    noted |= n.find("acc_hang: not used any more") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace

namespace {

TEST(Exclusion, ASlowCallIsNotAHang) {
  // Calls of 0.25 s against a timing budget of 0.1 s: the warm-up call runs past the budget,
  // but the plugin answered within hang_s, so it is measured once, not abandoned.
  ::setenv("QFORGE_ACC_FIXTURE_HANG_MS", "250", 1);
  const auto dir = acc_test::scratch_dir("cache");
  auto o = acc_test::options(dir / "tuning.json");
  o.budget.per_workload_s = 0.1;
  o.budget.hang_s = 5;
  Accelerator acc(acc_test::plugins({"acc_hang"}), o);
  const TuneReport r = acc.tune(acc_test::small_matmul(8));
  EXPECT_EQ(r.source, DecisionSource::tuned);
  EXPECT_EQ(r.winner.plugin, "acc_hang");
  EXPECT_EQ(r.candidates[0].status, CandidateStatus::measured) << r.candidates[0].message;
  EXPECT_GE(r.winner_seconds, 0.2);
  EXPECT_FALSE(r.complete);
  EXPECT_TRUE(acc.quarantined().empty());
}

}  // namespace
