// Every GEMM kernel of cpu_x86, run through plans of it (skipped with the reason when this CPU,
// the build or the restriction rules it out), against the reference on random problems whose
// shapes walk the tile edges: M and N of 1..8, powers of two +-1, primes; K not a multiple of
// any tile depth, and K past one or several of the AVX-512 GEMM tile's K blocks (256 k each).
#include <gtest/gtest.h>

#include "gemm_cases.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cpu_x86_test {
namespace {

const std::vector<std::int64_t> kM = {1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 37, 65};
const std::vector<std::int64_t> kN = {1, 3, 8, 15, 16, 17, 31, 33, 63, 65, 100};
const std::vector<std::int64_t> kK = {1, 3, 4, 5, 31, 64, 65, 127, 131, 200, 259, 777};

class CpuX86Gemm : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    loaded_ = load_plugin();
    if (!loaded_.ops) GTEST_SKIP() << loaded_.why_missing;
    if (!loaded_.ops->availability().usable) GTEST_SKIP() << loaded_.ops->availability().reason;
    std::string why;
    if (!kernel_runnable(*loaded_.ops, GetParam(), &why)) GTEST_SKIP() << why;
  }
  RunWith kernel(std::string* ran = nullptr, bool fix_b = false) const {
    return {.kernel = GetParam(), .fix_b = fix_b, .packed = nullptr, .ran = ran};
  }
  bool blocked() const { return GetParam().find("_qbw_") != std::string::npos; }
  bool maddubs() const { return GetParam().find("maddubs") != std::string::npos; }
  Loaded loaded_;
};

TEST_P(CpuX86Gemm, MatchesReferenceOnRandomShapes) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  const ProblemOptions opt{blocked(), maddubs(), false};
  for (int i = 0; i < 40; ++i) {
    const std::int64_t m = rows_for(GetParam(), kM[rng() % kM.size()]), n = kN[rng() % kN.size()],
                       k = kK[rng() % kK.size()];
    const MatmulProblem p = random_problem(rng, m, n, k, opt);
    for (OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant}) {
      ASSERT_TRUE(offers(ops, op, p, GetParam())) << p.text();
      std::string ran;
      const std::string err = check_matmul(ops, op, p, kernel(&ran));
      ASSERT_EQ(err, "") << "case " << i;
      ASSERT_EQ(ran, GetParam());
    }
  }
}

// qlinear_matmul takes no block-wise weights, so only the plain GEMM kernels run it.
class CpuX86GemmRequant : public CpuX86Gemm {};

TEST_P(CpuX86GemmRequant, RequantizingEpilogueMatchesReference) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  const ProblemOptions opt{false, maddubs(), true};
  for (int i = 0; i < 30; ++i) {
    const std::int64_t m = rows_for(GetParam(), kM[rng() % kM.size()]), n = kN[rng() % kN.size()],
                       k = kK[rng() % kK.size()];
    const MatmulProblem p = random_problem(rng, m, n, k, opt);
    ASSERT_TRUE(offers(ops, OpKind::qlinear_matmul, p, GetParam())) << p.text();
    const std::string err = check_matmul(ops, OpKind::qlinear_matmul, p, kernel());
    ASSERT_EQ(err, "") << "case " << i;
  }
}

TEST_P(CpuX86Gemm, PackedWeightsServeEveryM) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  MatmulProblem p = random_problem(rng, 1, 67, 259, {blocked(), maddubs(), !blocked()});
  const auto packed = ops.pack_weights(p.desc, p.b.data());
  EXPECT_EQ(packed->backend(), "cpu_x86");
  EXPECT_GE(packed->bytes(), static_cast<std::size_t>(67 * 259));
  for (std::int64_t m : {1, 4, 16, 17, 40}) {
    MatmulProblem pm = random_problem(rng, m, 67, 259, {blocked(), maddubs(), !blocked()});
    pm.desc.b = p.desc.b;
    pm.desc.b_layout = p.desc.b_layout;
    pm.b = p.b;
    if (pm.desc.a.scheme().granularity == Granularity::per_channel &&
        pm.desc.a.count() != static_cast<std::size_t>(m))
      continue;
    // One packing through the per-call ops (the backend's kernel), and the kernel under test
    // on B packed by a plan for this M.
    const RunWith shared{.kernel = "", .fix_b = false, .packed = packed.get(), .ran = nullptr};
    for (OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant}) {
      ASSERT_EQ(check_matmul(ops, op, pm, shared), "") << "M = " << m;
      if (offers(ops, op, pm, GetParam()))
        ASSERT_EQ(check_matmul(ops, op, pm, kernel(nullptr, true)), "") << "M = " << m;
    }
    if (!blocked() && pm.desc.y) {
      ASSERT_EQ(check_matmul(ops, OpKind::qlinear_matmul, pm, shared), "");
      if (offers(ops, OpKind::qlinear_matmul, pm, GetParam()))
        ASSERT_EQ(check_matmul(ops, OpKind::qlinear_matmul, pm, kernel(nullptr, true)), "");
    }
  }
}

// Extreme operands at the largest K the int32 bound allows: every partial sum runs far past
// what a saturating accumulator could hold, and the true result only just fits.
TEST_P(CpuX86Gemm, ExactAtTheInt32Bound) {
  SCOPED_TRACE(seed_text());
  QuantizationOps& ops = *loaded_.ops;
  const bool qbw = blocked();
  const std::int64_t m = rows_for(GetParam(), 3);
  for (DType bt : {DType::int8, DType::uint8}) {
    MatmulDesc d{
        .m = m,
        .n = 17,
        .k = 1,
        .a = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 0),
        .b = qbw ? QuantizationParams(bt, Scheme::block_affine(32), std::vector<float>(17, 0.25f),
                                      std::vector<std::int32_t>(17, bt == DType::int8 ? 127 : 255))
                 : QuantizationParams::per_tensor_affine(bt, 0.25f, bt == DType::int8 ? 127 : 255),
        .b_layout = MatrixLayout::nk,
        .has_bias = false,
        .out_type = FloatType::f32,
        .y = std::nullopt};
    if (maddubs() && bt == DType::uint8) continue;  // uint8 0 is -128 in the s8 domain
    const std::int64_t safe = reference::int32_safe_k(d);
    d.k = qbw ? safe / 32 * 32 : safe;
    if (qbw) {
      const std::int64_t blocks = (d.k + 31) / 32;
      d.b = QuantizationParams(bt, Scheme::block_affine(32),
                               std::vector<float>(static_cast<std::size_t>(17 * blocks), 0.25f),
                               std::vector<std::int32_t>(static_cast<std::size_t>(17 * blocks),
                                                         bt == DType::int8 ? 127 : 255));
    }
    MatmulProblem p{d,
                    std::vector<std::uint8_t>(static_cast<std::size_t>(m * d.k), 255),
                    std::vector<std::uint8_t>(static_cast<std::size_t>(17 * d.k),
                                              bt == DType::int8 ? 0x81 : 0x00),
                    {}};
    if (maddubs()) {
      // maddubs is offered for weights whose scheme excludes -128: symmetric, at -127.
      const std::int64_t pairs = qbw ? 17 * ((d.k + 31) / 32) : 1;
      p.desc.b = qbw ? QuantizationParams::blockwise(
                           bt, Mapping::symmetric, 32,
                           std::vector<float>(static_cast<std::size_t>(pairs), 0.25f))
                     : QuantizationParams::per_tensor_symmetric(bt, 0.25f);
      p.desc.k = qbw ? reference::int32_safe_k(p.desc) / 32 * 32 : reference::int32_safe_k(p.desc);
      p.a.assign(static_cast<std::size_t>(m * p.desc.k), 255);
      p.b.assign(static_cast<std::size_t>(17 * p.desc.k), 0x81);
      if (qbw)
        p.desc.b = QuantizationParams::blockwise(
            bt, Mapping::symmetric, 32,
            std::vector<float>(static_cast<std::size_t>(17 * ((p.desc.k + 31) / 32)), 0.25f));
    }
    for (std::size_t i = 0; i < p.a.size(); i += 7) p.a[i] = 0;  // not all rows identical
    ASSERT_TRUE(offers(ops, OpKind::matmul_integer, p, GetParam())) << p.text();
    const std::string err = check_matmul(ops, OpKind::matmul_integer, p, kernel());
    ASSERT_EQ(err, "") << name(bt) << " K = " << d.k;
  }
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Kernels, CpuX86GemmRequant, ::testing::ValuesIn(kGemmKernels), param_name);

INSTANTIATE_TEST_SUITE_P(Kernels, CpuX86Gemm, ::testing::ValuesIn([] {
                           std::vector<std::string> all = kGemmKernels;
                           all.insert(all.end(), kBlockKernels.begin(), kBlockKernels.end());
                           return all;
                         }()),
                         param_name);

}  // namespace
}  // namespace qforge::cpu_x86_test
