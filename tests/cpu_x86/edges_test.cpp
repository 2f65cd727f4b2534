// Edges of the cpu_x86 contract: the int32 bound, descriptors the kernels refuse, empty
// shapes, foreign or mismatched packed weights, the maddubs exactness rule.
#include <gtest/gtest.h>

#include "gemm_cases.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cpu_x86_test {
namespace {

class CpuX86Edges : public ::testing::Test {
 protected:
  void SetUp() override {
    loaded_ = load_plugin();
    if (!loaded_.ops) GTEST_SKIP() << loaded_.why_missing;
    if (!loaded_.ops->availability().usable) GTEST_SKIP() << loaded_.ops->availability().reason;
  }
  static MatmulDesc desc(std::int64_t m, std::int64_t n, std::int64_t k) {
    return MatmulDesc{.m = m,
                      .n = n,
                      .k = k,
                      .a = QuantizationParams::per_tensor_affine(DType::uint8, 0.1f, 3),
                      .b = QuantizationParams::per_tensor_affine(DType::int8, 0.2f, -5),
                      .b_layout = MatrixLayout::kn,
                      .has_bias = false,
                      .out_type = FloatType::f32,
                      .y = std::nullopt};
  }
  void expect_refused(const OpDesc& op, const std::string& words) {
    const Support s = loaded_.ops->supports(op);
    EXPECT_FALSE(s.supported) << describe(op);
    EXPECT_NE(s.reason.find(words), std::string::npos) << s.reason;
  }
  Loaded loaded_;
};

TEST_F(CpuX86Edges, KBeyondTheInt32BoundIsRefused) {
  MatmulDesc d = desc(2, 3, 1);
  const std::int64_t safe = reference::int32_safe_k(d);
  d.k = safe;
  EXPECT_TRUE(loaded_.ops->supports({OpKind::matmul_integer, d}).supported);
  d.k = safe + 1;
  for (OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant})
    expect_refused({op, d}, "int32");
  std::vector<std::uint8_t> a(static_cast<std::size_t>(2 * d.k)),
      b(static_cast<std::size_t>(3 * d.k));
  std::vector<std::int32_t> c(6);
  try {
    loaded_.ops->matmul_integer(d, a.data(), b.data(), c.data());
    ADD_FAILURE() << "K beyond the bound ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
  EXPECT_THROW(loaded_.ops->pack_weights(d, b.data()), Error);
}

// qlinear_matmul's C + int32 bias leaving int32 in one column: the reference's overflow error,
// for the GEMV and GEMM row counts and both requantization modes (the float mode with a
// per-tensor A takes the fused compensate-bias-requantize epilogue, AVX2 or AVX-512).
TEST_F(CpuX86Edges, QlinearBiasSumLeavingInt32IsReportedAsTheReferenceDoes) {
  for (const char* isa : {"avx2", "all"})
    for (const std::int64_t m : {3, 40})
      for (const RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point}) {
        loaded_.ops->set_option("isa", isa);
        MatmulDesc d = desc(m, 20, 16);
        d.a = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 0);
        d.b = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f);
        d.has_bias = true;
        d.y = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
        d.requant_mode = mode;
        const std::vector<std::uint8_t> a(static_cast<std::size_t>(m * 16), 255),
            b(static_cast<std::size_t>(16 * 20), 127);
        std::vector<std::int32_t> bias(20, 0);
        bias[17] = 2147483647 - 100;  // 16 * 255 * 127 more leaves int32
        std::vector<std::uint8_t> y(static_cast<std::size_t>(m * 20));
        std::string want;
        try {
          reference::qlinear_matmul(d, a.data(), b.data(), bias.data(), y.data());
        } catch (const Error& e) {
          ASSERT_EQ(e.code(), ErrorCode::overflow);
          want = e.what();
        }
        ASSERT_FALSE(want.empty());
        try {
          loaded_.ops->qlinear_matmul_bias(d, a.data(), b.data(), bias.data(), y.data());
          ADD_FAILURE() << "no overflow reported, isa " << isa << ", m " << m;
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::overflow);
          EXPECT_EQ(std::string(e.what()), want);
        }
      }
}

TEST_F(CpuX86Edges, RefusesWhatTheKernelsDoNotTake) {
  MatmulDesc d = desc(4, 4, 8);
  d.a = QuantizationParams::per_tensor_affine(DType::int16, 0.1f, 0);
  expect_refused({OpKind::matmul_integer, d}, "int16");
  d = desc(4, 4, 8);
  d.out_type = FloatType::f16;
  expect_refused({OpKind::matmul_dequant, d}, "float32");
  d = desc(4, 4, 10);
  d.b_layout = MatrixLayout::nk;
  d.b = QuantizationParams(DType::int8, Scheme::block_symmetric(5), std::vector<float>(8, 0.1f));
  expect_refused({OpKind::matmul_dequant, d}, "multiple of 4");
  d.b = QuantizationParams(DType::int8, Scheme::block_symmetric(4), std::vector<float>(12, 0.1f));
  EXPECT_TRUE(loaded_.ops->supports({OpKind::matmul_dequant, d}).supported);
  expect_refused({OpKind::qlinear_matmul, d}, "block-wise");
  // What the reference refuses, cpu_x86 refuses too.
  d = desc(4, 4, 8);
  d.b =
      QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, std::vector<float>(8, 0.1f));
  expect_refused({OpKind::matmul_integer, d}, "axis");
}

TEST_F(CpuX86Edges, EmptyShapesWriteNothingAndDoNotFail) {
  for (auto [m, n, k] : {std::tuple<int, int, int>{0, 5, 7}, {5, 0, 7}, {5, 6, 0}, {0, 0, 0}}) {
    const MatmulDesc d = desc(m, n, k);
    std::vector<std::uint8_t> a(static_cast<std::size_t>(m * k) + 1),
        b(static_cast<std::size_t>(n * k) + 1);
    std::vector<std::int32_t> got(static_cast<std::size_t>(m * n) + 1, 77), want(got.size(), 77);
    reference::matmul_integer(d, a.data(), b.data(), want.data());
    loaded_.ops->matmul_integer(d, a.data(), b.data(), got.data());
    EXPECT_EQ(got, want) << m << "x" << n << "x" << k;
  }
}

TEST_F(CpuX86Edges, PackedWeightsMustMatchAndComeFromCpuX86) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  const MatmulProblem p = random_problem(rng, 5, 20, 30, {false, false, false});
  const auto packed = loaded_.ops->pack_weights(p.desc, p.b.data());
  MatmulDesc other = p.desc;
  other.k = 31;  // a valid descriptor, but not the one the weights were packed for
  std::vector<std::uint8_t> a(5 * 31);
  std::vector<std::int32_t> c(5 * 20);
  try {
    loaded_.ops->matmul_integer_packed(other, a.data(), *packed, c.data());
    ADD_FAILURE() << "mismatched packed weights ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch) << e.what();
  }
  auto scalar = load_plugin("cpu_scalar");
  if (!scalar.ops) GTEST_SKIP() << "cpu_scalar not built: " << scalar.why_missing;
  const auto foreign = scalar.ops->pack_weights(p.desc, p.b.data());
  try {
    loaded_.ops->matmul_integer_packed(p.desc, p.a.data(), *foreign, c.data());
    ADD_FAILURE() << "weights packed by cpu_scalar ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
  }
}

// Block-wise B with more than 64K (scale, zero point) pairs: params that differ from the packed
// ones in a single pair anywhere (here at a random position) are refused; equal params built
// anew (another identity) and copies (the same identity) run.
TEST_F(CpuX86Edges, PackedBlockwiseParamsAreComparedExactly) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  const std::int64_t m = 1, n = 2100, k = 1024, block = 32;  // 67200 pairs
  std::vector<float> scales(static_cast<std::size_t>(n * (k / block)));
  std::uniform_real_distribution<float> u(0.01f, 0.1f);
  for (auto& v : scales) v = u(rng);
  const auto a_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.05f, 128);
  MatmulDesc d{m,
               n,
               k,
               a_params,
               QuantizationParams::blockwise(DType::int4, Mapping::symmetric, block, scales),
               MatrixLayout::nk};
  Support s = loaded_.ops->supports({OpKind::matmul_dequant, d});
  if (!s.supported) GTEST_SKIP() << s.reason;
  std::vector<std::uint8_t> a(static_cast<std::size_t>(m * k), 130),
      b(static_cast<std::size_t>(n * k / 2), 0x21);
  std::vector<float> y(static_cast<std::size_t>(m * n));
  const auto packed = loaded_.ops->pack_weights(d, b.data());
  loaded_.ops->matmul_dequant_packed(d, a.data(), *packed, nullptr,
                                     y.data());  // same params object
  MatmulDesc rebuilt = d;
  rebuilt.b = QuantizationParams::blockwise(DType::int4, Mapping::symmetric, block, scales);
  EXPECT_NE(rebuilt.b.identity(), d.b.identity());
  loaded_.ops->matmul_dequant_packed(rebuilt, a.data(), *packed, nullptr,
                                     y.data());  // equal contents
  auto changed = scales;
  const auto at = std::uniform_int_distribution<std::size_t>(4096, changed.size() - 4097)(rng);
  changed[at] *= 2.0f;
  MatmulDesc other = d;
  other.b = QuantizationParams::blockwise(DType::int4, Mapping::symmetric, block, changed);
  try {
    loaded_.ops->matmul_dequant_packed(other, a.data(), *packed, nullptr, y.data());
    ADD_FAILURE() << "packed weights ran with params that differ at pair " << at;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch) << e.what();
  }
}

TEST_F(CpuX86Edges, MaddubsNeverRunsOnWeightsHoldingMinus128) {
  std::string why;
  if (!kernel_runnable(*loaded_.ops, "q8_gemm_4x16c4__avx2_maddubs", &why)) GTEST_SKIP() << why;
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  // Both layouts: the -128 sits in the first (whole) panel and in the part of K that the
  // vector packer handles (k < 28 for kn, k < 16 for nk with K = 30).
  for (const auto layout : {MatrixLayout::kn, MatrixLayout::nk}) {
    SCOPED_TRACE(std::string("b_layout ") + std::string(to_string(layout)));
    loaded_.ops->set_option("isa", "all");
    MatmulProblem p = random_problem(rng, 20, 20, 30, {false, true, false});
    p.desc.b = QuantizationParams::per_tensor_affine(DType::int8, 0.1f, 0);
    p.desc.b_layout = layout;
    p.b = random_codes(rng, DType::int8, 20 * 30, -127, 127);
    const std::size_t at = layout == MatrixLayout::kn ? 7 : 3 * 30 + 4;  // (k 0, n 7) or (n 3, k 4)
    // Affine int8 weights may hold -128, so supports() does not offer maddubs for them, and a
    // plan asking for it is refused.
    const OpDesc op{OpKind::matmul_integer, p.desc};
    const Support s = loaded_.ops->supports(op);
    for (const auto& k : s.kernels) EXPECT_EQ(k.find("maddubs"), std::string::npos) << k;
    try {
      loaded_.ops->plan(op, PlanRequest{0, "q8_gemm_4x16c4__avx2_maddubs", {}});
      ADD_FAILURE() << "a maddubs plan was made for weights that may hold -128";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
    }
    // With B fixed, the automatic choice under an AVX2 restriction looks at its values: the
    // exact maddwd kernel for weights that hold -128 (|a| * 128 pairs could reach 32768 and
    // saturate), maddubs for weights that hold none.
    loaded_.ops->set_option("isa", "avx2");
    const RunWith fixed_b{.kernel = "", .fix_b = true, .packed = nullptr, .ran = nullptr};
    std::string ran;
    RunWith how = fixed_b;
    how.ran = &ran;
    p.b[at] = 0x80;
    ASSERT_EQ(check_matmul(*loaded_.ops, OpKind::matmul_integer, p, how), "");
    EXPECT_EQ(ran, "q8_gemm_2x16c4__avx2_maddwd");
    p.b[at] = 0x81;
    ASSERT_EQ(check_matmul(*loaded_.ops, OpKind::matmul_integer, p, how), "");
    EXPECT_EQ(ran, "q8_gemm_4x16c4__avx2_maddubs");
    // The per-call op (B packed on each call) is exact on weights holding -128 too.
    p.b[at] = 0x80;
    ASSERT_EQ(check_matmul(*loaded_.ops, OpKind::matmul_integer, p), "");
  }
  loaded_.ops->set_option("isa", "all");
}

// A plan asks for one of the kernels supports() lists: a kernel of another op, or the reference
// (which the matmuls do not list: they always have a vector kernel), is refused.
TEST_F(CpuX86Edges, KernelOfAnotherOpIsRefused) {
  const OpDesc op{OpKind::matmul_integer, desc(3, 3, 3)};
  for (const char* kernel : {"q8_quantize__avx2", "reference", "no_such_kernel"}) {
    try {
      loaded_.ops->plan(op, PlanRequest{0, kernel, {}});
      ADD_FAILURE() << "a plan of " << kernel << " was made for a matmul";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find(kernel), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace qforge::cpu_x86_test
