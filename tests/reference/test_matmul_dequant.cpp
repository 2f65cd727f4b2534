// matmul_dequant: the documented float32 evaluation order (bit for bit against an independent
// loop), block-wise B partial sums, bias, float16/bfloat16 outputs, errors.
#include <cstring>

#include "matmul_support.h"

namespace qforge {
namespace {

using reference::matmul_dequant;

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The documented order, written from the definition with param_index on the full shapes.
float expected_y(const MatmulDesc& d, const void* a, const void* b, const float* bias,
                 std::int64_t m, std::int64_t n) {
  const float sa = d.a.scale(d.a.param_index(d.a_shape(), m * d.k));
  const Shape bs = d.b_shape();
  const auto b_flat = [&](std::int64_t k) {
    return d.b_layout == MatrixLayout::kn ? k * d.n + n : n * d.k + k;
  };
  float v = 0.0f;
  if (d.b.scheme().granularity != Granularity::block) {
    const float sb = d.b.scale(d.b.param_index(bs, b_flat(0)));
    v = (static_cast<float>(test::naive_dot(d, a, b, m, n, 0, d.k)) * sa) * sb;
  } else {
    const std::int64_t block = d.b.scheme().block_size;
    for (std::int64_t k0 = 0; k0 < d.k; k0 += block) {
      const float sb = d.b.scale(d.b.param_index(bs, b_flat(k0)));
      const auto c = test::naive_dot(d, a, b, m, n, k0, std::min(k0 + block, d.k));
      v = v + (static_cast<float>(c) * sa) * sb;
    }
  }
  if (d.has_bias) v = v + bias[n];
  return v;
}

TEST(MatmulDequant, HandExample) {
  // A int8 [[1, 2], [3, 4]] sa = 0.5, B = identity (kn) sb = 2, bias [0.25, -1].
  const std::int8_t a[] = {1, 2, 3, 4};
  const std::int8_t b[] = {1, 0, 0, 1};
  const float bias[] = {0.25f, -1.0f};
  MatmulDesc d = test::matmul(2, 2, 2, QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f),
                              QuantizationParams::per_tensor_symmetric(DType::int8, 2.0f));
  d.has_bias = true;
  std::vector<float> y(4);
  matmul_dequant(d, a, b, bias, y.data());
  EXPECT_EQ(y, (std::vector<float>{1.25f, 1.0f, 3.25f, 3.0f}));
  d.has_bias = false;
  matmul_dequant(d, a, b, nullptr, y.data());
  EXPECT_EQ(y, (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}));
}

TEST(MatmulDequant, BlockwisePartialSums) {
  // B [1, 5] nk int8, blocks of 2 with scales {1, 0.5, 0.25}; A = ones, sa = 2.
  const std::int8_t a[] = {1, 1, 1, 1, 1};
  const std::int8_t b[] = {4, 4, 8, 8, 16};
  const MatmulDesc d = test::matmul(
      1, 1, 5, QuantizationParams::per_tensor_symmetric(DType::int8, 2.0f),
      QuantizationParams::blockwise(DType::int8, Mapping::symmetric, 2, {1, 0.5f, 0.25f}),
      MatrixLayout::nk);
  float y = 0;
  matmul_dequant(d, a, b, nullptr, &y);
  EXPECT_EQ(y, 2.0f * (8 * 1 + 16 * 0.5f + 16 * 0.25f));
}

TEST(MatmulDequant, RandomMatchesDocumentedOrderBitForBit) {
  QFORGE_SEEDED_RNG(rng);
  for (int iter = 0; iter < 500; ++iter) {
    auto r = test::random_matmul(rng, /*allow_block_b=*/true);
    MatmulDesc& d = r.desc;
    d.has_bias = iter % 2;
    d.out_type = static_cast<FloatType>(iter % 3);
    std::vector<float> bias(static_cast<std::size_t>(d.n));
    for (auto& v : bias) v = test::uniform(rng, -2.0f, 2.0f);
    SCOPED_TRACE(describe(OpDesc{OpKind::matmul_dequant, d}));
    const auto count = static_cast<std::size_t>(d.m * d.n);
    std::vector<std::uint8_t> y(count * 4 + 1, 0xCD);
    matmul_dequant(d, r.a.data(), r.b.data(), d.has_bias ? bias.data() : nullptr, y.data());
    EXPECT_EQ(y[count * static_cast<std::size_t>(size_of(d.out_type))], 0xCD) << "wrote past y";
    for (std::int64_t m = 0; m < d.m; ++m)
      for (std::int64_t n = 0; n < d.n; ++n) {
        const float e = expected_y(d, r.a.data(), r.b.data(), bias.data(), m, n);
        std::vector<std::uint8_t> one(4);
        store_float(d.out_type, one.data(), 0, e);
        const auto i = static_cast<std::size_t>(m * d.n + n);
        ASSERT_EQ(bits(load_float(d.out_type, y.data(), i)),
                  bits(load_float(d.out_type, one.data(), 0)))
            << "(" << m << ", " << n << ")";
      }
  }
}

TEST(MatmulDequant, Errors) {
  const auto pt = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0);
  std::vector<std::uint8_t> buf(64);
  MatmulDesc d = test::matmul(2, 2, 2, pt, pt);
  d.has_bias = true;
  EXPECT_QFORGE_ERROR(matmul_dequant(d, buf.data(), buf.data(), nullptr, buf.data()),
                      ErrorCode::invalid_argument, "bias (has_bias is set) is null for 2 elements");
  // int16 worst case overflows C.
  const auto i16 = QuantizationParams::per_tensor_affine(DType::int16, 1.0f, 0);
  std::vector<std::int16_t> big(4, -32768);
  float y[1];
  EXPECT_QFORGE_ERROR(
      matmul_dequant(test::matmul(1, 1, 4, i16, i16), big.data(), big.data(), nullptr, y),
      ErrorCode::overflow, "C[0, 0]");
  const auto blocks = QuantizationParams::blockwise(DType::int16, Mapping::affine, 2, {1, 1});
  EXPECT_QFORGE_ERROR(matmul_dequant(test::matmul(1, 1, 4, i16, blocks, MatrixLayout::nk),
                                     big.data(), big.data(), nullptr, y),
                      ErrorCode::overflow, "C[0, 0] (block 0) = 2147483648");
}

}  // namespace
}  // namespace qforge
