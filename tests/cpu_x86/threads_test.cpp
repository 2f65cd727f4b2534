// Results must not depend on the thread count: every kernel, 1, 2 and 3 threads, identical
// bytes (the work is split into tiles whose arithmetic is fixed by the tile alone); nor on the
// GEMV weight prefetch distance.
#include <gtest/gtest.h>

#include <initializer_list>
#include <tuple>

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
  // Every matmul op the kernel under test serves, on fresh random problems of each shape, once
  // per value of `option`: the bytes must not change.
  void expect_same_bytes(const char* option, std::initializer_list<const char*> values,
                         std::initializer_list<std::tuple<int, int, int>> shapes) {
    SCOPED_TRACE(seed_text());
    Rng rng = test_rng();
    QuantizationOps& ops = *loaded_.ops;
    const bool qbw = GetParam().find("_qbw_") != std::string::npos;
    const bool maddubs = GetParam().find("maddubs") != std::string::npos;
    for (auto [m, n, k] : shapes) {
      const MatmulProblem p =
          random_problem(rng, rows_for(GetParam(), m), n, k, {qbw, maddubs, !qbw});
      for (OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant, OpKind::qlinear_matmul}) {
        if (op == OpKind::qlinear_matmul && qbw) continue;
        ASSERT_TRUE(offers(ops, op, p, GetParam())) << p.text();
        std::vector<std::vector<std::uint8_t>> outs;
        for (const char* v : values) {
          ops.set_option(option, v);
          outs.push_back(run_matmul(ops, op, p, GetParam()));
        }
        for (std::size_t i = 1; i < outs.size(); ++i)
          EXPECT_EQ(outs[0], outs[i]) << option << " = " << *(values.begin() + i) << ", "
                                      << to_string(op) << " " << p.text();
      }
    }
  }
  Loaded loaded_;
};

TEST_P(CpuX86Threads, SameBytesForOneTwoThreeThreads) {
  // Big enough for many tasks per thread in both directions.
  expect_same_bytes("threads", {"1", "2", "3"}, {{200, 300, 100}, {5, 1000, 64}, {70, 33, 517}});
}

// The GEMV kernels' weight prefetch is a hint: no distance may change a byte. M <= 16 picks
// the GEMV role; prefetches past the end of the packed weights are harmless hints too.
TEST_P(CpuX86Threads, SameBytesForEveryGemvPrefetchDistance) {
  expect_same_bytes("gemv_prefetch", {"0", "64", "4096", "65536"},
                    {{1, 300, 700}, {16, 129, 256}, {7, 40, 64}});
  loaded_.ops->set_option("gemv_prefetch", "default");
}

INSTANTIATE_TEST_SUITE_P(Kernels, CpuX86Threads, ::testing::ValuesIn([] {
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
                       QuantizationParams::per_tensor_affine(DType::uint8, 0.07f, 131),
                       FloatType::f32};
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
