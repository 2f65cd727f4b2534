// Results must not depend on the thread count: every kernel, 1, 2 and 3 threads, identical
// bytes (the work is split into tiles whose arithmetic is fixed by the tile alone).
#include <gtest/gtest.h>

#include "gemm_cases.h"
#include "qforge/reference.h"

namespace qforge::cpu_x86_test {
namespace {

class CpuX86Threads : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    loaded_ = load_plugin();
    if (!loaded_.ops) GTEST_SKIP() << loaded_.why_missing;
    if (!loaded_.ops->availability().usable) GTEST_SKIP() << loaded_.ops->availability().reason;
    std::string why;
    if (!kernel_runnable(*loaded_.ops, GetParam(), &why)) GTEST_SKIP() << why;
  }
  Loaded loaded_;
};

TEST_P(CpuX86Threads, SameBytesForOneTwoThreeThreads) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  ops.set_kernel({GetParam()});
  const bool qbw = GetParam().find("_qbw_") != std::string::npos;
  const bool maddubs = GetParam().find("maddubs") != std::string::npos;
  // Big enough for many tasks per thread in both directions.
  for (auto [m, n, k] : {std::tuple<int, int, int>{200, 300, 100}, {5, 1000, 64}, {70, 33, 517}}) {
    const MatmulProblem p = random_problem(rng, m, n, k, {qbw, maddubs, !qbw});
    for (OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant, OpKind::qlinear_matmul}) {
      if (op == OpKind::qlinear_matmul && qbw) continue;
      std::vector<std::vector<std::uint8_t>> outs;
      for (const char* t : {"1", "2", "3"}) {
        ops.set_option("threads", t);
        outs.push_back(run_matmul(ops, op, p));
      }
      EXPECT_EQ(outs[0], outs[1]) << to_string(op) << " " << p.text();
      EXPECT_EQ(outs[0], outs[2]) << to_string(op) << " " << p.text();
    }
  }
}

// The GEMV kernels' weight prefetch is a hint: no distance may change a byte. M <= 16 picks
// the GEMV role; prefetches past the end of the packed weights are harmless hints too.
TEST_P(CpuX86Threads, SameBytesForEveryGemvPrefetchDistance) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  ops.set_kernel({GetParam()});
  const bool qbw = GetParam().find("_qbw_") != std::string::npos;
  const bool maddubs = GetParam().find("maddubs") != std::string::npos;
  for (auto [m, n, k] : {std::tuple<int, int, int>{1, 300, 700}, {16, 129, 256}, {7, 40, 64}}) {
    const MatmulProblem p = random_problem(rng, m, n, k, {qbw, maddubs, !qbw});
    for (OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant}) {
      std::vector<std::vector<std::uint8_t>> outs;
      for (const char* bytes : {"0", "64", "4096", "65536"}) {
        ops.set_option("gemv_prefetch", bytes);
        outs.push_back(run_matmul(ops, op, p));
      }
      ops.set_option("gemv_prefetch", "default");
      for (std::size_t i = 1; i < outs.size(); ++i) EXPECT_EQ(outs[0], outs[i]) << to_string(op) << " " << p.text();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, CpuX86Threads,
                         ::testing::ValuesIn([] {
                           std::vector<std::string> all = kGemmKernels;
                           all.insert(all.end(), kBlockKernels.begin(), kBlockKernels.end());
                           return all;
                         }()),
                         [](const auto& info) { return info.param; });

TEST(CpuX86ThreadsElementwise, QuantizeSameBytes) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  std::uniform_real_distribution<float> u(-10.0f, 10.0f);
  std::vector<float> x(300007);
  for (auto& v : x) v = u(rng);
  const QuantizeDesc d{{static_cast<std::int64_t>(x.size())},
                       QuantizationParams::per_tensor_affine(DType::uint8, 0.07f, 131), FloatType::f32};
  std::vector<std::vector<std::uint8_t>> outs;
  for (const char* t : {"1", "2", "3"}) {
    l.ops->set_option("threads", t);
    std::vector<std::uint8_t> q(x.size());
    l.ops->quantize(d, x.data(), q.data());
    outs.push_back(q);
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[0], outs[2]);
  std::vector<std::uint8_t> want(x.size());
  reference::quantize(d, x.data(), want.data());
  EXPECT_EQ(outs[0], want);
}

}  // namespace
}  // namespace qforge::cpu_x86_test
