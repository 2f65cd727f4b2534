// cpu_x86's matmul_weight_only (float A, int4/uint4/int8/uint8 B, float Y) against the
// double-precision reference: random shapes with K not a multiple of the block or of the 256-k
// chunk, odd N (partial panels), M = 1 and M past the 192-row tasks, with and without zero
// points and bias, per call and through plans with B fixed or given per run, from two threads;
// the thread count does not change a bit of the output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cpu_x86_test {
namespace {

constexpr const char* kKernel = "f32_qw_gemm_6x16__avx2_fma";
constexpr double kTolerance = 1e-10;  // docs/NUMERICS.md, "Weight-only matmul"

std::int64_t pick(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

struct Case {
  MatmulDesc d;
  std::vector<float> a, bias;
  std::vector<std::uint8_t> b;
};

Case random_case(Rng& rng, std::int64_t m, std::int64_t n, std::int64_t k) {
  const DType types[] = {DType::int4, DType::uint4, DType::int8, DType::uint8};
  const DType t = types[rng() % 4];
  const bool symmetric = rng() % 2;
  const int g = static_cast<int>(rng() % 4);  // block 32 twice as often
  const bool kn = g < 2 && rng() % 2;         // blocks need nk
  const std::int64_t block = g == 3 ? pick(rng, 1, 80) : 32;
  QuantizationParams b_params =
      g == 0   ? random_params(rng, t, Granularity::per_tensor, symmetric, 1)
      : g == 1 ? random_params(rng, t, Granularity::per_channel, symmetric, n, kn ? 1 : 0)
               : random_params(rng, t, Granularity::block, symmetric, n * ((k + block - 1) / block),
                               0, block);
  Case c{MatmulDesc{m, n, k, QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                    std::move(b_params), kn ? MatrixLayout::kn : MatrixLayout::nk, rng() % 2 == 0,
                    FloatType::f32, std::nullopt, RequantMode::float_multiplier},
         {},
         {},
         {}};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  c.a.resize(static_cast<std::size_t>(m * k));
  for (auto& v : c.a) v = normal(rng);
  c.bias.resize(static_cast<std::size_t>(n));
  for (auto& v : c.bias) v = normal(rng);
  c.b = random_codes(rng, t, n * k, c.d.b.qmin(), c.d.b.qmax());
  return c;
}

std::vector<float> reference_of(const Case& c) {
  std::vector<float> y(static_cast<std::size_t>(c.d.m * c.d.n));
  reference::matmul_weight_only(c.d, c.a.data(), c.b.data(), c.bias.data(), y.data());
  return y;
}

::testing::AssertionResult close(const std::vector<float>& want, const std::vector<float>& got) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i]))
      return ::testing::AssertionFailure() << "y[" << i << "] = " << got[i] << ", expected "
                                           << want[i] << " (" << seed_text() << ")";
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  const double nmse = den > 0 ? num / den : num;
  if (nmse <= kTolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "NMSE " << nmse << " exceeds " << kTolerance << " (" << seed_text() << ")";
}

TEST(CpuX86WeightOnly, KernelIsOfferedAndMatchesReference) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  QuantizationOps& ops = *l.ops;
  Rng rng = test_rng();
  for (int iter = 0; iter < 60; ++iter) {
    const std::int64_t m = iter % 5 == 0 ? 1 : pick(rng, 1, iter % 7 == 0 ? 400 : 40);
    const std::int64_t n = pick(rng, 1, 70), k = pick(rng, 1, iter % 3 == 0 ? 600 : 130);
    const Case c = random_case(rng, m, n, k);
    SCOPED_TRACE(describe(OpDesc{OpKind::matmul_weight_only, c.d}) + ", " + seed_text());
    const Support s = ops.supports(OpDesc{OpKind::matmul_weight_only, c.d});
    ASSERT_TRUE(s.supported) << s.reason;
    ASSERT_EQ(s.kernels.front(), kKernel);
    const auto want = reference_of(c);
    std::vector<float> got(want.size(), std::nanf(""));
    ops.matmul_weight_only(c.d, c.a.data(), c.b.data(), c.d.has_bias ? c.bias.data() : nullptr,
                           got.data());
    EXPECT_EQ(own_kernel(ops, OpDesc{OpKind::matmul_weight_only, c.d}), kKernel);
    EXPECT_TRUE(close(want, got));
    // A plan of the reference kernel is the reference, bit for bit.
    const auto plan = plan_of(ops, OpDesc{OpKind::matmul_weight_only, c.d}, "reference");
    std::vector<const void*> in{c.a.data(), c.b.data()};
    if (c.d.has_bias) in.push_back(c.bias.data());
    plan->run(in, std::vector<void*>{got.data()});
    EXPECT_EQ(got, want);
  }
}

TEST(CpuX86WeightOnly, ThreadCountDoesNotChangeTheOutput) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  QuantizationOps& ops = *l.ops;
  Rng rng = test_rng();
  const Case c = random_case(rng, 203, 77, 333);
  SCOPED_TRACE(describe(OpDesc{OpKind::matmul_weight_only, c.d}) + ", " + seed_text());
  std::vector<std::vector<float>> outs;
  for (const char* threads : {"1", "3", "4"}) {
    ASSERT_TRUE(ops.set_option("threads", threads));
    std::vector<float> y(static_cast<std::size_t>(c.d.m * c.d.n));
    ops.matmul_weight_only(c.d, c.a.data(), c.b.data(), c.d.has_bias ? c.bias.data() : nullptr,
                           y.data());
    outs.push_back(std::move(y));
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[0], outs[2]);
}

TEST(CpuX86WeightOnly, PlansWithFixedAndPerRunWeightsFromTwoThreads) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  QuantizationOps& ops = *l.ops;
  Rng rng = test_rng();
  struct Job {
    Case c;
    std::vector<float> want;
    std::shared_ptr<const Plan> plan;
  };
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) {
    Job j{random_case(rng, i % 2 ? 1 : pick(rng, 2, 100), pick(rng, 1, 50), pick(rng, 1, 300)),
          {},
          nullptr};
    j.want = reference_of(j.c);
    const OpDesc op{OpKind::matmul_weight_only, j.c.d};
    std::vector<const void*> fixed = {nullptr, i % 4 < 2 ? j.c.b.data() : nullptr};
    if (j.c.d.has_bias) fixed.push_back(i % 3 ? j.c.bias.data() : nullptr);
    j.plan = ops.plan(op, PlanRequest{0, "", fixed});
    EXPECT_EQ(j.plan->kernel(), kKernel);
    jobs.push_back(std::move(j));
  }
  auto run_all = [&](std::vector<std::string>& errors) {
    for (int rep = 0; rep < 3; ++rep)
      for (const Job& j : jobs) {
        std::vector<float> got(j.want.size(), std::nanf(""));
        std::vector<const void*> in = {j.c.a.data(),
                                       j.plan->reads_input(1) ? j.c.b.data() : nullptr};
        if (j.c.d.has_bias) in.push_back(j.plan->reads_input(2) ? j.c.bias.data() : nullptr);
        std::vector<void*> out = {got.data()};
        j.plan->run(in, out);
        if (!close(j.want, got)) errors.push_back(describe(j.plan->desc()));
      }
  };
  std::vector<std::string> e1, e2;
  std::thread t([&] { run_all(e1); });
  run_all(e2);
  t.join();
  for (const auto* e : {&e1, &e2})
    for (const auto& what : *e)
      ADD_FAILURE() << "differs from the reference: " << what << " (" << seed_text() << ")";
}

TEST(CpuX86WeightOnly, ForcedKernelOfAnotherOpIsRefusedWithTheReason) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  QuantizationOps& ops = *l.ops;
  Rng rng = test_rng();
  const Case c = random_case(rng, 2, 3, 40);
  try {
    plan_of(ops, OpDesc{OpKind::matmul_weight_only, c.d}, "q8_gemm_2x16c4__avx2_maddwd");
    ADD_FAILURE() << "a plan of a GEMM kernel was made for matmul_weight_only";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("cannot run matmul_weight_only"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace qforge::cpu_x86_test
