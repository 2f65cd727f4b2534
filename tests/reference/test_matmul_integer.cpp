// matmul_integer: the ONNX MatMulInteger example, per-row / per-column / block zero points, every
// dtype pair against a naive loop, int32 overflow detection, int32_safe_k, errors.
#include "matmul_support.h"

namespace qforge {
namespace {

using reference::int32_safe_k;
using reference::matmul_integer;

std::vector<std::uint8_t> bytes_of(DType t, const std::vector<std::int32_t>& v) {
  std::vector<std::uint8_t> out(storage_bytes(t, v.size()), 0);
  for (std::size_t i = 0; i < v.size(); ++i) store_element(t, out.data(), i, v[i]);
  return out;
}

TEST(MatmulInteger, OnnxExample) {
  const auto a = bytes_of(DType::uint8, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  const auto b = bytes_of(DType::uint8, {1, 4, 2, 5, 3, 6});
  MatmulDesc d =
      test::matmul(4, 2, 3, QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 12),
                   QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0), MatrixLayout::kn);
  std::vector<std::int32_t> c(8);
  matmul_integer(d, a.data(), b.data(), c.data());
  EXPECT_EQ(c, (std::vector<std::int32_t>{-38, -83, -44, -98, -50, -113, -56, -128}));
  // The same B stored [N, K].
  const auto bt = bytes_of(DType::uint8, {1, 2, 3, 4, 5, 6});
  d.b_layout = MatrixLayout::nk;
  std::vector<std::int32_t> c2(8);
  matmul_integer(d, a.data(), bt.data(), c2.data());
  EXPECT_EQ(c2, c);
}

TEST(MatmulInteger, PerRowPerColumnAndBlockZeroPoints) {
  // A [2, 3] int8, za per row = {1, -1}; B [3, 2] kn uint8, zb per column = {2, 0}.
  const auto a = bytes_of(DType::int8, {1, 2, 3, -1, 0, 1});
  const auto b = bytes_of(DType::uint8, {2, 1, 3, 0, 4, 2});
  const MatmulDesc d = test::matmul(
      2, 2, 3, QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, {1, 1}, {1, -1}),
      QuantizationParams::per_channel(DType::uint8, Mapping::affine, 1, {1, 1}, {2, 0}),
      MatrixLayout::kn);
  std::vector<std::int32_t> c(4);
  matmul_integer(d, a.data(), b.data(), c.data());
  // A - za = [[0, 1, 2], [0, 1, 2]]; B - zb = [[0, 1], [1, 0], [2, 2]].
  EXPECT_EQ(c, (std::vector<std::int32_t>{5, 4, 5, 4}));
  // Block zero points along K for B [N=1, K=5], blocks of 2: zb = {1, 2, 3}.
  const auto a2 = bytes_of(DType::int8, {1, 1, 1, 1, 1});
  const auto b2 = bytes_of(DType::int4, {1, 2, 3, 4, 5});
  const MatmulDesc blk = test::matmul(
      1, 1, 5, QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0),
      QuantizationParams::blockwise(DType::int4, Mapping::affine, 2, {1, 1, 1}, {1, 2, 3}),
      MatrixLayout::nk);
  std::int32_t c2 = 0;
  matmul_integer(blk, a2.data(), b2.data(), &c2);
  EXPECT_EQ(c2, (0 + 1) + (1 + 2) + 2);
}

TEST(MatmulInteger, EmptyShapes) {
  const auto pt = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 3);
  std::vector<std::int32_t> c(6, 99);
  const std::vector<std::uint8_t> operand(12, 1);
  matmul_integer(test::matmul(0, 3, 4, pt, pt), nullptr, operand.data(), nullptr);  // C is empty
  matmul_integer(test::matmul(3, 0, 4, pt, pt), operand.data(), nullptr, nullptr);
  matmul_integer(test::matmul(0, 0, 0, pt, pt), nullptr, nullptr, nullptr);
  matmul_integer(test::matmul(2, 3, 0, pt, pt), nullptr, nullptr, c.data());  // K = 0: all zeros
  EXPECT_EQ(c, (std::vector<std::int32_t>(6, 0)));
}

TEST(MatmulInteger, EveryDtypePairMatchesNaiveLoop) {
  QFORGE_SEEDED_RNG(rng);
  for (int iter = 0; iter < 600; ++iter) {
    auto r = test::random_matmul(rng, /*allow_block_b=*/true);
    const MatmulDesc& d = r.desc;
    SCOPED_TRACE(describe(OpDesc{OpKind::matmul_integer, d}));
    std::vector<std::int32_t> c(static_cast<std::size_t>(d.m * d.n));
    matmul_integer(d, r.a.data(), r.b.data(), c.data());
    for (std::int64_t m = 0; m < d.m; ++m)
      for (std::int64_t n = 0; n < d.n; ++n)
        ASSERT_EQ(c[m * d.n + n], test::naive_dot(d, r.a.data(), r.b.data(), m, n, 0, d.k))
            << "(" << m << ", " << n << ")";
  }
}

TEST(MatmulInteger, OverflowIsReported) {
  // int16: (-32768)^2 * 2 = 2^31 does not fit int32.
  const auto a = bytes_of(DType::int16, {-32768, -32768});
  const auto pt = QuantizationParams::per_tensor_affine(DType::int16, 1.0f, 0);
  std::int32_t c = 0;
  const MatmulDesc d = test::matmul(1, 1, 2, pt, pt);
  EXPECT_QFORGE_ERROR(matmul_integer(d, a.data(), a.data(), &c), ErrorCode::overflow,
                      "C[0, 0] = 2147483648 does not fit int32");
  EXPECT_EQ(int32_safe_k(d), 1);
  const MatmulDesc one = test::matmul(1, 1, 1, pt, pt);
  matmul_integer(one, a.data(), a.data(), &c);
  EXPECT_EQ(c, 1 << 30);
}

TEST(MatmulInteger, Int32SafeKIsTight) {
  // int8 x int8 with zero points 0: |a|, |b| <= 128, so K = floor((2^31 - 1) / 2^14) = 131071.
  const auto i8 = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0);
  MatmulDesc d = test::matmul(1, 1, 0, i8, i8, MatrixLayout::nk);
  const std::int64_t safe = int32_safe_k(d);
  EXPECT_EQ(safe, 131071);
  // The worst case at K = safe fits; one more element overflows.
  std::vector<std::uint8_t> worst(static_cast<std::size_t>(safe + 1), 0x80);  // -128
  std::int32_t c = 0;
  d.k = safe;
  matmul_integer(d, worst.data(), worst.data(), &c);
  EXPECT_EQ(c, 131071 * 16384);
  d.k = safe + 1;
  EXPECT_QFORGE_ERROR(matmul_integer(d, worst.data(), worst.data(), &c), ErrorCode::overflow,
                      "2147483648");

  const auto u8 = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
  EXPECT_EQ(int32_safe_k(test::matmul(1, 1, 1, u8, i8)), 2147483647 / (255 * 128));
  const auto u8z = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 128);
  EXPECT_EQ(int32_safe_k(test::matmul(1, 1, 1, u8z, i8)), 131071);
  // Per-row zero points: the worst one counts (uint8 zp 3 -> 252, zp 250 -> 250).
  const auto rows =
      QuantizationParams::per_channel(DType::uint8, Mapping::affine, 0, {1, 1}, {3, 250});
  EXPECT_EQ(int32_safe_k(test::matmul(2, 1, 1, rows, u8)), 2147483647 / (252 * 255));
  const auto bin = QuantizationParams::per_tensor_symmetric(DType::binary, 1.0f);
  EXPECT_EQ(int32_safe_k(test::matmul(1, 1, 1, bin, bin)), 2147483647);
  const auto i4 = QuantizationParams::per_tensor_symmetric(DType::int4, 1.0f);
  EXPECT_EQ(int32_safe_k(test::matmul(1, 1, 1, i4, i8)), 2147483647 / (8 * 128));
}

TEST(MatmulInteger, Errors) {
  const auto pt = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0);
  std::vector<std::uint8_t> buf(64);
  std::vector<std::int32_t> c(16);
  const auto call = [&](const MatmulDesc& d) {
    matmul_integer(d, buf.data(), buf.data(), c.data());
  };
  EXPECT_QFORGE_ERROR(call(test::matmul(-1, 2, 2, pt, pt)), ErrorCode::invalid_argument,
                      "m = -1; expected >= 0");
  EXPECT_QFORGE_ERROR(
      call(test::matmul(2, 2, 2, QuantizationParams::logarithmic(DType::int8, 1.0f), pt)),
      ErrorCode::invalid_argument, "A (int8 per_tensor_logarithmic");
  EXPECT_QFORGE_ERROR(
      call(test::matmul(
          2, 2, 2, QuantizationParams::blockwise(DType::int8, Mapping::affine, 2, {1, 1}), pt)),
      ErrorCode::invalid_argument, "blocks are only defined for B");
  EXPECT_QFORGE_ERROR(
      call(test::matmul(
          2, 2, 2, QuantizationParams::per_channel(DType::int8, Mapping::affine, 1, {1, 1}), pt)),
      ErrorCode::invalid_argument, "expected axis 0");
  EXPECT_QFORGE_ERROR(
      call(test::matmul(
          3, 2, 2, QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, {1, 1}), pt)),
      ErrorCode::shape_mismatch, "2 scales for shape [3, 2]");
  // B per column: axis 1 for kn, axis 0 for nk.
  const auto b_axis0 = QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, {1, 1, 1});
  EXPECT_QFORGE_ERROR(call(test::matmul(2, 2, 3, pt, b_axis0, MatrixLayout::kn)),
                      ErrorCode::invalid_argument, "expected axis 1 (one pair per column N");
  const auto blocks = QuantizationParams::blockwise(DType::int8, Mapping::affine, 2, {1, 1, 1, 1});
  EXPECT_QFORGE_ERROR(call(test::matmul(2, 2, 4, pt, blocks, MatrixLayout::kn)),
                      ErrorCode::invalid_argument, "expected b_layout nk");
  call(test::matmul(2, 2, 4, pt, blocks, MatrixLayout::nk));  // the same blocks along K are fine
  EXPECT_QFORGE_ERROR(matmul_integer(test::matmul(2, 2, 2, pt, pt), nullptr, buf.data(), c.data()),
                      ErrorCode::invalid_argument, "a is null for 4 elements");
  EXPECT_QFORGE_ERROR(
      matmul_integer(test::matmul(2, 2, 2, pt, pt), buf.data(), buf.data(), nullptr),
      ErrorCode::invalid_argument, "c is null");
}

}  // namespace
}  // namespace qforge
