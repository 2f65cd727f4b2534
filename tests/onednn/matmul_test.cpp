// The int8 matmuls against qforge::reference on fresh random data: every operand dtype the
// plugin widens, zero points oneDNN takes (per tensor) and the ones the plugin compensates (per
// row / per column), both B layouts, shapes large enough for oneDNN's brgemm/AMX kernels, and
// the int32 edge where oneDNN's uncentered sums wrap and the compensation must undo it.
#include <gtest/gtest.h>

#include "matmul_check.h"
#include "qforge/reference.h"

namespace qforge::onednn_test {
namespace {

struct Shape3 {
  std::int64_t m, n, k;
};

MatmulDesc make_desc(Rng& rng, const Shape3& s, DType ta, DType tb, bool a_per_row, bool b_per_col,
                     bool b_symmetric, MatrixLayout layout) {
  return matmul_desc(
      s.m, s.n, s.k, random_params(rng, ta, false, a_per_row ? s.m : 0, 0),
      random_params(rng, tb, b_symmetric, b_per_col ? s.n : 0, layout == MatrixLayout::kn ? 1 : 0),
      layout);
}

// Skips when the plugin refuses int8 matmuls here (no VNNI/AMX: isa_test.cpp covers that).
#define SKIP_UNLESS_MATMULS(ops)                                                                \
  do {                                                                                          \
    const std::string why = device_property(ops, "int8_matmul");                                \
    if (why.rfind("exact", 0) != 0) GTEST_SKIP() << "onednn refuses int8 matmul here: " << why; \
  } while (0)

TEST(MatmulExact, EveryOperandTypeAndZeroPointSplit) {
  ONEDNN_OR_SKIP(ops);
  SKIP_UNLESS_MATMULS(ops);
  Rng rng = test_rng();
  const std::vector<Shape3> shapes = {{1, 37, 300}, {5, 64, 129}, {17, 31, 64}, {33, 16, 257}};
  const DType a_types[] = {DType::uint8, DType::int8, DType::uint4, DType::int4, DType::binary};
  const DType b_types[] = {DType::int8, DType::uint8, DType::int4, DType::uint4, DType::binary};
  int compared = 0;
  for (const DType ta : a_types)
    for (const DType tb : b_types)
      for (int variant = 0; variant < 4; ++variant) {
        const Shape3 s = shapes[static_cast<std::size_t>(rng() % shapes.size())];
        const bool a_per_row = variant & 1, b_per_col = variant & 2;
        const MatrixLayout layout = (rng() & 1) ? MatrixLayout::kn : MatrixLayout::nk;
        MatmulDesc d = make_desc(rng, s, ta, tb, a_per_row, b_per_col, false, layout);
        compared += expect_exact(ops, random_run(rng, OpKind::matmul_integer, d));
        d.has_bias = true;
        compared += expect_exact(ops, random_run(rng, OpKind::matmul_dequant, d));
        d.has_bias = false;
        d.y = QuantizationParams::per_tensor_affine((rng() & 1) ? DType::uint8 : DType::int8,
                                                    random_scale(rng) * 64.0f, 3);
        d.requant_mode = (rng() & 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
        compared += expect_exact(ops, random_run(rng, OpKind::qlinear_matmul, d));
      }
  EXPECT_GT(compared, 0);
}

TEST(MatmulExact, LargeShapesEveryKernel) {
  ONEDNN_OR_SKIP(ops);
  SKIP_UNLESS_MATMULS(ops);
  Rng rng = test_rng();
  // Sizes where oneDNN picks its blocked (brgemm / AMX) kernels; K not a multiple of 64.
  for (const Shape3 s : {Shape3{128, 256, 520}, Shape3{300, 129, 1000}, Shape3{1, 1024, 1023}}) {
    for (const DType ta : {DType::uint8, DType::int8}) {
      MatmulDesc d = make_desc(rng, s, ta, DType::int8, false, true, true, MatrixLayout::nk);
      d.has_bias = true;
      const int n = expect_exact(ops, random_run(rng, OpKind::matmul_dequant, d));
      EXPECT_EQ(n, 4) << "expected the int32 and the fused kernel, each direct and prepacked";
      d.has_bias = false;
      d.y = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 128);
      EXPECT_GT(expect_exact(ops, random_run(rng, OpKind::qlinear_matmul, d)), 0);
    }
  }
}

TEST(MatmulExact, FloatOutputsOfTheInt32Kernel) {
  ONEDNN_OR_SKIP(ops);
  SKIP_UNLESS_MATMULS(ops);
  Rng rng = test_rng();
  for (const FloatType out : {FloatType::f16, FloatType::bf16}) {
    MatmulDesc d =
        make_desc(rng, {9, 40, 77}, DType::uint8, DType::int8, true, true, false, MatrixLayout::kn);
    d.out_type = out;
    d.has_bias = true;
    EXPECT_EQ(expect_exact(ops, random_run(rng, OpKind::matmul_dequant, d)), 2) << name(out);
  }
}

// A all 255 with zero points 127/128 per row (compensated by the plugin, so oneDNN sums the
// uncentered A * B, which leaves int32 and wraps), B all -128, K at the bound: the exact C is
// (255 - za) * -128 * K, down to -2^31 + 16384, which fits.
TEST(MatmulExact, CompensationUndoesWrappedInt32Sums) {
  ONEDNN_OR_SKIP(ops);
  SKIP_UNLESS_MATMULS(ops);
  MatmulDesc d = matmul_desc(
      2, 3, 1,
      QuantizationParams::per_channel(DType::uint8, Mapping::affine, 0, {0.5f, 0.25f}, {127, 128}),
      QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 0));
  d.k = reference::int32_safe_k(d);
  ASSERT_EQ(d.k, 131071);
  MatmulRun run{OpKind::matmul_integer, d, {}, {}, {}};
  run.a.assign(static_cast<std::size_t>(d.m * d.k), 255);
  run.b.assign(static_cast<std::size_t>(d.n * d.k), static_cast<std::uint8_t>(-128));
  EXPECT_EQ(expect_exact(ops, run), 2);
  // The same through oneDNN's own source zero point (per tensor, no compensation).
  run.desc.a = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 127);
  EXPECT_EQ(expect_exact(ops, run), 2);
  // And per-column weight zero points with a per-tensor A: the row-sum compensation.
  run.desc.a = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 0);
  run.desc.b = QuantizationParams::per_channel(DType::int8, Mapping::affine, 1, {1.0f, 1.0f, 1.0f},
                                               {0, -1, 1});
  run.desc.k = reference::int32_safe_k(run.desc);
  run.a.assign(static_cast<std::size_t>(d.m * run.desc.k), 255);
  run.b.assign(static_cast<std::size_t>(d.n * run.desc.k), static_cast<std::uint8_t>(-128));
  EXPECT_EQ(expect_exact(ops, run), 2);
}

TEST(MatmulExact, EmptyShapes) {
  ONEDNN_OR_SKIP(ops);
  SKIP_UNLESS_MATMULS(ops);
  Rng rng = test_rng();
  for (const Shape3 s : {Shape3{0, 5, 7}, Shape3{3, 0, 7}, Shape3{3, 5, 0}}) {
    MatmulDesc d =
        make_desc(rng, s, DType::uint8, DType::int8, false, false, false, MatrixLayout::kn);
    d.has_bias = true;
    expect_exact(ops, random_run(rng, OpKind::matmul_integer, d));
    expect_exact(ops, random_run(rng, OpKind::matmul_dequant, d));
  }
}

TEST(MatmulRefusals, NameWhatIsNotClaimed) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  MatmulDesc d =
      make_desc(rng, {4, 8, 64}, DType::uint8, DType::int8, false, false, false, MatrixLayout::nk);
  d.b = QuantizationParams(DType::int8, Scheme::block_symmetric(32), std::vector<float>(16, 0.5f));
  Support s = ops.supports({OpKind::matmul_dequant, d});
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("block-wise"), std::string::npos) << s.reason;

  d = make_desc(rng, {4, 8, 64}, DType::int16, DType::int8, false, false, false, MatrixLayout::kn);
  s = ops.supports({OpKind::matmul_integer, d});
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("int16"), std::string::npos) << s.reason;

  d = make_desc(rng, {2, 2, 1}, DType::int8, DType::int8, false, false, false, MatrixLayout::kn);
  d.k = reference::int32_safe_k(d) + 1;
  s = ops.supports({OpKind::matmul_integer, d});
  EXPECT_FALSE(s.supported);
  if (device_property(ops, "int8_matmul").rfind("exact", 0) == 0) {
    EXPECT_NE(s.reason.find("int32_safe_k"), std::string::npos) << s.reason;
  }

  // An op called anyway throws unsupported with the same reason.
  std::vector<std::uint8_t> a(static_cast<std::size_t>(d.m * d.k)),
      b(static_cast<std::size_t>(d.n * d.k));
  std::vector<std::int32_t> c(4);
  try {
    ops.matmul_integer(d, a.data(), b.data(), c.data());
    ADD_FAILURE() << "matmul_integer ran a refused descriptor";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_EQ(std::string(e.what()), s.reason);
  }
}

TEST(MatmulRefusals, PackedWeightsMustMatch) {
  ONEDNN_OR_SKIP(ops);
  SKIP_UNLESS_MATMULS(ops);
  Rng rng = test_rng();
  MatmulDesc d =
      make_desc(rng, {4, 8, 64}, DType::uint8, DType::int8, false, false, false, MatrixLayout::nk);
  const auto b = random_codes(rng, DType::int8, d.n * d.k);
  const auto w = ops.pack_weights(d, b.data());
  EXPECT_EQ(w->backend(), "onednn");
  MatmulDesc other = d;
  other.n = 9;
  std::vector<std::uint8_t> a(static_cast<std::size_t>(d.m * d.k));
  std::vector<std::int32_t> c(static_cast<std::size_t>(other.m * other.n));
  try {
    ops.matmul_integer_packed(other, a.data(), *w, c.data());
    ADD_FAILURE() << "packed weights for n=8 accepted with n=9";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch) << e.what();
  }
}

}  // namespace
}  // namespace qforge::onednn_test
