// The rule that keeps a model's plans on one thread pool (docs/MODEL.md, "Thread pools"): on
// fake timings, what it keeps and what it moves; then in a QuantizedModel whose accelerator
// measures injected costs, that the small last Gemm leaves onednn's OpenMP team for cpu_x86
// when onednn wins it alone by less than a hand-over, and that the user's plugins still bound
// the choice.
#include "thread_pool_choice.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fixtures.h"
#include "qforge/error.h"
#include "qforge/testing/accelerator_hooks.h"

namespace qforge::model {
namespace {

using namespace qtest;
using quantize::choose_thread_pools;
using quantize::home_pool;
using quantize::kCallerPool;
using quantize::PlanCandidates;
using quantize::PoolCandidate;

PoolCandidate cand(const std::string& plugin, const std::string& kernel, const std::string& pool,
                   double seconds) {
  return {CandidateId{plugin, 0, kernel}, pool, seconds};
}
PoolCandidate x86(const std::string& kernel, double s) {
  return cand("cpu_x86", kernel, "cpu_x86", s);
}
PoolCandidate dnnl(const std::string& kernel, double s) {
  return cand("onednn", kernel, "openmp", s);
}
PoolCandidate scalar(double s) {
  return cand("cpu_scalar", "scalar_reference", std::string(kCallerPool), s);
}

constexpr double kHandOver = 100e-6;

// The Fashion-MNIST MLP as the tuner saw it: input quantize and two Gemms on cpu_x86, the last
// Gemm (m=256 n=10 k=128) a few microseconds faster alone on onednn.
std::vector<PlanCandidates> mlp(double onednn_last, double x86_last) {
  return {
      {x86("q8_quantize__avx2", 80e-6), {dnnl("loop_quantize", 600e-6), scalar(9e-3)}},
      {x86("q8_gemm_6x64c4", 750e-6), {x86("q8_gemm_4x16c4", 2e-3), scalar(60e-3)}},
      {x86("q8_gemm_6x64c4", 200e-6), {scalar(10e-3)}},
      {dnnl("dnnl_matmul_s8s8_s32", onednn_last),
       {x86("q8_gemm_4x16c4", x86_last + 5e-6), x86("q8_gemm_6x64c4", x86_last),
        dnnl("dnnl_matmul_s8s8_f32", onednn_last + 1e-6), scalar(400e-6)}},
  };
}

TEST(ThreadPoolChoice, LoneSmallGemmOnAnotherPoolMovesToTheFastestHomeCandidate) {
  const auto plans = mlp(10e-6, 14e-6);
  EXPECT_EQ(home_pool(plans), "cpu_x86");
  const std::vector<CandidateId> got = choose_thread_pools(plans, kHandOver);
  ASSERT_EQ(got.size(), plans.size());
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(got[i], plans[i].winner.id) << i;
  EXPECT_EQ(got[3], (CandidateId{"cpu_x86", 0, "q8_gemm_6x64c4"}));
}

TEST(ThreadPoolChoice, AWinByMoreThanAHandOverStays) {
  const auto plans = mlp(10e-6, 10e-6 + kHandOver);
  EXPECT_EQ(choose_thread_pools(plans, kHandOver)[3], plans[3].winner.id);
  // Just under the hand-over: moved.
  const auto close = mlp(10e-6, 10e-6 + kHandOver * 0.99);
  EXPECT_EQ(choose_thread_pools(close, kHandOver)[3].plugin, "cpu_x86");
}

TEST(ThreadPoolChoice, NeighboursOnOnePoolShareOneHandOver) {
  // Two consecutive onednn plans, each 60 us faster alone: together they cover one hand-over.
  std::vector<PlanCandidates> plans = {
      {x86("big", 1e-3), {}},
      {dnnl("a", 40e-6), {x86("a", 100e-6)}},
      {dnnl("b", 40e-6), {x86("b", 100e-6)}},
      {x86("big", 1e-3), {}},
  };
  std::vector<CandidateId> got = choose_thread_pools(plans, kHandOver);
  EXPECT_EQ(got[1].plugin, "onednn");
  EXPECT_EQ(got[2].plugin, "onednn");
  // A home plan between them makes two runs, each saving less than a hand-over.
  plans.insert(plans.begin() + 2, PlanCandidates{x86("mid", 1e-4), {}});
  got = choose_thread_pools(plans, kHandOver);
  EXPECT_EQ(got[1], (CandidateId{"cpu_x86", 0, "a"}));
  EXPECT_EQ(got[3], (CandidateId{"cpu_x86", 0, "b"}));
  // A plan on the calling thread between them does not interrupt the run.
  plans[2] = PlanCandidates{scalar(1e-5), {x86("mid", 2e-5)}};
  got = choose_thread_pools(plans, kHandOver);
  EXPECT_EQ(got[1].plugin, "onednn");
  EXPECT_EQ(got[2].plugin, "cpu_scalar");
  EXPECT_EQ(got[3].plugin, "onednn");
}

TEST(ThreadPoolChoice, TheCallingThreadIsAnAlternativeEverywhere) {
  std::vector<PlanCandidates> plans = {
      {x86("big", 1e-3), {}},
      {dnnl("small", 3e-6), {scalar(5e-6)}},
  };
  EXPECT_EQ(choose_thread_pools(plans, kHandOver)[1].plugin, "cpu_scalar");
}

TEST(ThreadPoolChoice, UnknownCostsKeepTheTunersChoice) {
  // The winner not measured (a default or a budget that ran out): kept.
  std::vector<PlanCandidates> plans = mlp(10e-6, 14e-6);
  plans[3].winner.seconds = 0;
  EXPECT_EQ(choose_thread_pools(plans, kHandOver)[3].plugin, "onednn");
  // No measured candidate on the home pool or the calling thread: kept.
  plans = mlp(10e-6, 14e-6);
  plans[3].others = {dnnl("dnnl_matmul_s8s8_f32", 11e-6), cand("cpu_x86", "k", "cpu_x86", 0)};
  EXPECT_EQ(choose_thread_pools(plans, kHandOver)[3].plugin, "onednn");
  // A run keeps all its members when one of them cannot move.
  plans = {
      {x86("big", 1e-3), {}},
      {dnnl("a", 40e-6), {x86("a", 41e-6)}},
      {dnnl("b", 40e-6), {dnnl("b2", 41e-6)}},
  };
  const std::vector<CandidateId> got = choose_thread_pools(plans, kHandOver);
  EXPECT_EQ(got[1].plugin, "onednn");
  EXPECT_EQ(got[2].plugin, "onednn");
}

TEST(ThreadPoolChoice, HomeIsWhereMostOfTheTimeGoes) {
  // onednn runs the big Gemm: the lone cpu_x86 plan next to it moves to onednn.
  std::vector<PlanCandidates> plans = {
      {dnnl("big", 1e-3), {x86("big", 1.2e-3)}},
      {x86("small", 10e-6), {dnnl("small", 12e-6)}},
      {x86("small2", 10e-6), {dnnl("small2", 12e-6)}},
  };
  EXPECT_EQ(home_pool(plans), "openmp");
  const std::vector<CandidateId> got = choose_thread_pools(plans, kHandOver);
  EXPECT_EQ(got[0].plugin, "onednn");
  EXPECT_EQ(got[1], (CandidateId{"onednn", 0, "small"}));
  EXPECT_EQ(got[2], (CandidateId{"onednn", 0, "small2"}));
  // With nothing measured the pool of most plans is home.
  for (PlanCandidates& p : plans) p.winner.seconds = 0;
  EXPECT_EQ(home_pool(plans), "cpu_x86");
}

TEST(ThreadPoolChoice, NothingToDo) {
  EXPECT_TRUE(choose_thread_pools({}, kHandOver).empty());
  // Every winner on its calling thread: no home pool.
  const std::vector<PlanCandidates> plans = {{scalar(1e-3), {x86("k", 1e-4)}}};
  EXPECT_EQ(home_pool(plans), "");
  EXPECT_EQ(choose_thread_pools(plans, kHandOver)[0].plugin, "cpu_scalar");
  // A hand-over of 0 keeps every winner.
  const auto mlp_plans = mlp(10e-6, 14e-6);
  EXPECT_EQ(choose_thread_pools(mlp_plans, 0)[3].plugin, "onednn");
}

// Random chains: whatever the times, a plan moves only from a pool other than home to a
// measured candidate of its own on the home pool or the calling thread, and only when its
// winner was measured.
TEST(ThreadPoolChoice, RandomChainsMoveOnlyForeignPlansToHome) {
  SCOPED_TRACE(test::seed_text());
  std::mt19937_64 g = test::rng(0x9001);
  const std::vector<std::string> pools = {"cpu_x86", "openmp", "other", std::string(kCallerPool)};
  std::uniform_int_distribution<std::size_t> pick(0, pools.size() - 1);
  std::uniform_real_distribution<double> seconds(0, 300e-6);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<PlanCandidates> plans(1 + g() % 8);
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const std::string pool = pools[pick(g)];
      const double s = g() % 5 == 0 ? 0.0 : seconds(g);
      plans[i].winner = cand("w" + pool, "k" + std::to_string(i), pool, s);
      for (std::size_t j = g() % 4; j > 0; --j) {
        const std::string p = pools[pick(g)];
        plans[i].others.push_back(
            cand("o" + p, "k" + std::to_string(i) + "_" + std::to_string(j), p, s + seconds(g)));
      }
    }
    const double hand_over = seconds(g);
    const std::string home = home_pool(plans);
    const std::vector<CandidateId> got = choose_thread_pools(plans, hand_over);
    ASSERT_EQ(got.size(), plans.size());
    for (std::size_t i = 0; i < plans.size(); ++i) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " plan " + std::to_string(i));
      const PlanCandidates& p = plans[i];
      if (got[i] == p.winner.id) continue;
      EXPECT_NE(p.winner.pool, home);
      EXPECT_NE(p.winner.pool, kCallerPool);
      EXPECT_GT(p.winner.seconds, 0);
      const PoolCandidate* to = nullptr;
      for (const PoolCandidate& c : p.others)
        if (c.id == got[i]) to = &c;
      ASSERT_NE(to, nullptr);
      EXPECT_TRUE(to->pool == home || to->pool == kCallerPool) << to->pool;
      EXPECT_GT(to->seconds, 0);
    }
    EXPECT_EQ(choose_thread_pools(plans, 0).size(), plans.size());
    for (std::size_t i = 0; i < plans.size(); ++i)
      EXPECT_EQ(choose_thread_pools(plans, 0)[i], plans[i].winner.id);
  }
}

// ---- in a QuantizedModel, with the accelerator's timings injected ----

// Sets or clears an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// An accelerator that measures the injected costs: cpu_x86 runs everything in 10 us except the
// last Gemm (matmul_dequant: float out), which onednn runs in 10 us and cpu_x86 in 14 us;
// every other candidate takes a millisecond. Probes still run for real.
std::unique_ptr<Accelerator> injected_accelerator(std::vector<std::string> plugins) {
  AcceleratorOptions o;
  o.policy.plugins = std::move(plugins);
  o.use_cache = false;
  o.online_tuning = true;
  auto hooks = std::make_shared<detail::AcceleratorTestHooks>();
  hooks->injected_cost = [](const CandidateId& id, const OpDesc& op, CostPhase phase) {
    if (phase != CostPhase::op) return 0.0;
    if (op.op == OpKind::matmul_dequant) {
      if (id.plugin == "onednn") return 10e-6;
      if (id.plugin == "cpu_x86") return 14e-6;
    } else if (id.plugin == "cpu_x86") {
      return 10e-6;
    }
    return 1e-3;
  };
  o.test_hooks = hooks;
  return std::make_unique<Accelerator>(o);
}

const QuantizedLayerInfo& layer_named(const QuantizedModel& q, const std::string& name) {
  for (const QuantizedLayerInfo& l : q.layers())
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

// Whether onednn can run the last Gemm here (it refuses int8 matmuls it would not compute
// exactly, without VNNI or AMX) and cpu_x86 loaded; the reason to skip, else empty.
std::string onednn_next_to_cpu_x86_missing() {
  for (const char* p : {"onednn", "cpu_x86"})
    if (!PluginRegistry::global().find(p)) return std::string(p) + " did not load";
  const auto* onednn = PluginRegistry::global().find("onednn");
  const auto devices = onednn->devices();
  const auto it = devices.at(0).properties.find("int8_matmul");
  if (it == devices.at(0).properties.end() || it->second.rfind("exact", 0) != 0)
    return "onednn refuses int8 matmuls here: " +
           (it == devices.at(0).properties.end() ? std::string("?") : it->second);
  if (devices.at(0).properties.count("thread_pool") == 0) return "onednn reports no thread_pool";
  return {};
}

struct MlpCase {
  Graph graph;
  Prepared prepared;
};

MlpCase small_mlp(std::uint64_t salt) {
  std::mt19937_64 g = test::rng(salt);
  MlpCase c{gemm_mlp(g, MlpShape{}), {}};
  const auto data = batches(g, c.graph, kCalibrationBatches);
  c.prepared = prepare(c.graph, matmul_recipe(minmax_layer()), data);
  return c;
}

TEST(ThreadPoolChoiceModel, TheLastGemmStaysWithItsNeighboursUnlessTheUserSaysOtherwise) {
  SCOPED_TRACE(test::seed_text());
  if (const std::string why = onednn_next_to_cpu_x86_missing(); !why.empty()) GTEST_SKIP() << why;
  MlpCase c = small_mlp(0x9002);
  const Prepared& p = c.prepared;
  // The plugins' thread counts decide their pools: with one thread both run on the caller.
  const auto pool_of = [](const char* plugin) {
    return PluginRegistry::global().find(plugin)->devices().at(0).properties.at("thread_pool");
  };
  if (pool_of("cpu_x86") == kCallerPool || pool_of("onednn") == kCallerPool)
    GTEST_SKIP() << "cpu_x86 or onednn runs on one thread here: no pools to keep apart";
  {
    const ScopedEnv env("QFORGE_MODEL_HAND_OVER", nullptr);
    auto acc = injected_accelerator({});
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    EXPECT_EQ(layer_named(q, "fc1").backend, "cpu_x86");
    EXPECT_EQ(layer_named(q, "fc2").backend, "cpu_x86");
  }
  {
    // A hand-over of 0: the accelerator's choice.
    const ScopedEnv env("QFORGE_MODEL_HAND_OVER", "0");
    auto acc = injected_accelerator({});
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    EXPECT_EQ(layer_named(q, "fc2").backend, "onednn");
  }
  {
    // The user's plugins bound the choice: with onednn and cpu_scalar only, nothing moves to
    // cpu_x86, and onednn (the home pool now) keeps the last Gemm.
    const ScopedEnv env("QFORGE_MODEL_HAND_OVER", nullptr);
    auto acc = injected_accelerator({"onednn", "cpu_scalar"});
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    for (const QuantizedLayerInfo& l : q.layers()) EXPECT_NE(l.backend, "cpu_x86") << l.name;
    EXPECT_EQ(layer_named(q, "fc2").backend, "onednn");
  }
}

TEST(ThreadPoolChoiceModel, OutputsDoNotDependOnThePoolChoice) {
  SCOPED_TRACE(test::seed_text());
  if (const std::string why = onednn_next_to_cpu_x86_missing(); !why.empty()) GTEST_SKIP() << why;
  MlpCase c = small_mlp(0x9003);
  const Prepared& p = c.prepared;
  std::mt19937_64 g = test::rng(0x9004);
  const auto inputs = batches(g, c.graph, 3);
  std::vector<TensorMap> outputs[2];
  for (int side = 0; side < 2; ++side) {
    const ScopedEnv env("QFORGE_MODEL_HAND_OVER", side == 0 ? "0" : nullptr);
    auto acc = injected_accelerator({});
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    for (const TensorMap& in : inputs) outputs[side].push_back(q.run(in));
  }
  // Integer GEMMs are exact on both plugins; the float epilogue of matmul_dequant is within
  // NUMERICS.md's bound, so compare closely rather than bit for bit.
  for (std::size_t b = 0; b < inputs.size(); ++b) {
    const auto x = outputs[0][b].at("y").values<float>();
    const auto y = outputs[1][b].at("y").values<float>();
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(x[i], y[i], 1e-4f * (1.0f + std::abs(x[i]))) << "batch " << b << " at " << i;
  }
}

TEST(ThreadPoolChoiceModel, AMalformedHandOverIsRefused) {
  if (!PluginRegistry::global().find("cpu_x86")) GTEST_SKIP() << "cpu_x86 did not load";
  MlpCase c = small_mlp(0x9005);
  const Prepared& p = c.prepared;
  for (const char* bad : {"-1", "abc", "1e400", "0.1s"}) {
    const ScopedEnv env("QFORGE_MODEL_HAND_OVER", bad);
    auto acc = injected_accelerator({});
    try {
      QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
      ADD_FAILURE() << "accepted QFORGE_MODEL_HAND_OVER=" << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("QFORGE_MODEL_HAND_OVER"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace qforge::model
