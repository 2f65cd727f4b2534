// matmul_weight_only: hand examples (MatMulNBits' uint4 default zero point 8), the documented
// double-precision sum against an independent loop on random shapes, and every descriptor error.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

using reference::matmul_weight_only;

MatmulDesc weight_only(std::int64_t m, std::int64_t n, std::int64_t k, QuantizationParams b,
                       MatrixLayout layout = MatrixLayout::nk) {
  return MatmulDesc{m,
                    n,
                    k,
                    QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                    std::move(b),
                    layout,
                    /*has_bias=*/false,
                    FloatType::f32,
                    std::nullopt,
                    RequantMode::float_multiplier};
}

TEST(MatmulWeightOnly, HandExampleUint4ZeroPointEight) {
  // B [N=2, K=3] uint4, one block of 32 per row, z = 8: codes {9, 10, 8} and {0, 15, 8} are
  // weights {1, 2, 0} * 0.5 and {-8, 7, 0} * 0.25. A = [[1, 2, 3]], bias [0.5, -1].
  const std::uint8_t b[] = {0x9 | (0xA << 4), 0x8 | (0x0 << 4), 0xF | (0x8 << 4)};
  MatmulDesc d = weight_only(
      1, 2, 3,
      QuantizationParams::blockwise(DType::uint4, Mapping::affine, 32, {0.5f, 0.25f}, {8, 8}));
  const float a[] = {1, 2, 3};
  const float bias[] = {0.5f, -1.0f};
  float y[2] = {};
  matmul_weight_only(d, a, b, nullptr, y);
  EXPECT_EQ(y[0], 1 * 0.5f + 2 * 1.0f);
  EXPECT_EQ(y[1], 1 * -2.0f + 2 * 1.75f);
  d.has_bias = true;
  matmul_weight_only(d, a, b, bias, y);
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_EQ(y[1], 0.5f);
}

TEST(MatmulWeightOnly, PartialLastBlockUsesItsOwnScale) {
  // K = 5, blocks of 2: scales {1, 0.5, 0.25} along the row, int4 symmetric codes all 2.
  std::vector<std::byte> b(3);
  for (std::size_t i = 0; i < 5; ++i) store_element(DType::int4, b.data(), i, 2);
  const MatmulDesc d = weight_only(
      1, 1, 5, QuantizationParams::blockwise(DType::int4, Mapping::symmetric, 2, {1, 0.5f, 0.25f}));
  const float a[] = {1, 1, 1, 1, 1};
  float y = 0;
  matmul_weight_only(d, a, b.data(), nullptr, &y);
  EXPECT_EQ(y, 2 * (2 * 1.0f + 2 * 0.5f + 0.25f));
}

// The definition, written independently: param_index on the full B shape, long double sums.
std::vector<float> expected(const MatmulDesc& d, const std::vector<float>& a,
                            const std::vector<std::byte>& b, const std::vector<float>& bias) {
  std::vector<float> y(static_cast<std::size_t>(d.m * d.n));
  const Shape bs = d.b_shape();
  for (std::int64_t m = 0; m < d.m; ++m)
    for (std::int64_t n = 0; n < d.n; ++n) {
      double acc = 0;
      for (std::int64_t k = 0; k < d.k; ++k) {
        const std::int64_t flat = d.b_layout == MatrixLayout::kn ? k * d.n + n : n * d.k + k;
        const std::size_t p = d.b.param_index(bs, flat);
        const float w =
            static_cast<float>(load_element(d.b.dtype(), b.data(), static_cast<std::size_t>(flat)) -
                               d.b.zero_point(p)) *
            d.b.scale(p);
        acc += static_cast<double>(a[static_cast<std::size_t>(m * d.k + k)]) * w;
      }
      if (d.has_bias) acc += bias[static_cast<std::size_t>(n)];
      y[static_cast<std::size_t>(m * d.n + n)] = static_cast<float>(acc);
    }
  return y;
}

TEST(MatmulWeightOnly, RandomMatchesDefinitionBitForBit) {
  QFORGE_SEEDED_RNG(rng);
  const DType types[] = {DType::int4, DType::uint4, DType::int8, DType::uint8};
  for (int iter = 0; iter < 300; ++iter) {
    const DType t = types[iter % 4];
    const std::int64_t m = test::uniform_int(rng, 0, 5), n = test::uniform_int(rng, 1, 9),
                       k = test::uniform_int(rng, 1, 70);
    const int g = static_cast<int>(test::uniform_int(rng, 0, 2));
    const Mapping map = test::uniform_int(rng, 0, 1) ? Mapping::affine : Mapping::symmetric;
    const MatrixLayout layout =
        g == 2 || test::uniform_int(rng, 0, 1) ? MatrixLayout::nk : MatrixLayout::kn;
    const std::int64_t block = test::uniform_int(rng, 1, 40);
    const std::size_t pairs = g == 0   ? 1
                              : g == 1 ? static_cast<std::size_t>(n)
                                       : static_cast<std::size_t>(n * ((k + block - 1) / block));
    std::vector<float> scales(pairs);
    std::vector<std::int32_t> zps;
    for (auto& s : scales) s = test::uniform(rng, 0.01f, 2.0f);
    if (map == Mapping::affine)
      for (std::size_t i = 0; i < pairs; ++i)
        zps.push_back(
            static_cast<std::int32_t>(test::uniform_int(rng, traits(t).qmin, traits(t).qmax)));
    const Scheme scheme{map,
                        g == 0   ? Granularity::per_tensor
                        : g == 1 ? Granularity::per_channel
                                 : Granularity::block,
                        layout == MatrixLayout::kn ? 1 : 0, block};
    MatmulDesc d = weight_only(m, n, k, QuantizationParams(t, scheme, scales, zps), layout);
    d.has_bias = iter % 2;
    SCOPED_TRACE(describe(OpDesc{OpKind::matmul_weight_only, d}));
    std::vector<float> a(static_cast<std::size_t>(m * k)), bias(static_cast<std::size_t>(n));
    for (auto& v : a) v = test::uniform(rng, -3.0f, 3.0f);
    for (auto& v : bias) v = test::uniform(rng, -2.0f, 2.0f);
    std::vector<std::byte> b(storage_bytes(t, static_cast<std::size_t>(n * k)));
    for (std::size_t i = 0; i < static_cast<std::size_t>(n * k); ++i)
      store_element(
          t, b.data(), i,
          static_cast<std::int32_t>(test::uniform_int(rng, traits(t).qmin, traits(t).qmax)));
    std::vector<float> y(static_cast<std::size_t>(m * n), std::nanf(""));
    matmul_weight_only(d, a.data(), b.data(), bias.data(), y.data());
    const auto want = expected(d, a, b, bias);
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], want[i]) << "at " << i;
    // The op table runs the same reference from arrays.
    std::vector<float> y2(y.size());
    const void* in[] = {a.data(), b.data(), bias.data()};
    void* out[] = {y2.data()};
    run_reference(OpDesc{OpKind::matmul_weight_only, d}, in, out);
    EXPECT_EQ(y, y2);
  }
}

void expect_error(const MatmulDesc& d, const std::string& fragment) {
  const OpDesc op{OpKind::matmul_weight_only, d};
  try {
    reference::check_descriptor(op);
    FAIL() << "accepted " << describe(op);
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("reference::matmul_weight_only: ", 0), 0u) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
    // The op throws the same message as the check.
    std::vector<float> buf(1 << 12);
    try {
      matmul_weight_only(d, buf.data(), buf.data(), buf.data(), buf.data());
      ADD_FAILURE() << "op accepted " << describe(op);
    } catch (const Error& e2) {
      EXPECT_EQ(std::string(e2.what()), what);
    }
  }
}

TEST(MatmulWeightOnly, DescriptorErrors) {
  const auto block = QuantizationParams::blockwise(DType::int4, Mapping::symmetric, 32, {1, 1});
  MatmulDesc d = weight_only(2, 2, 8, block);
  reference::check_descriptor(OpDesc{OpKind::matmul_weight_only, d});

  MatmulDesc bad = d;
  bad.k = -1;
  expect_error(bad, "k");
  bad = d;
  bad.out_type = FloatType::f16;
  expect_error(bad, "expected f32");
  bad = d;
  bad.b = QuantizationParams::per_tensor_symmetric(DType::int16, 1.0f);
  expect_error(bad, "expected int4, uint4, int8 or uint8");
  bad = d;
  bad.b_layout = MatrixLayout::kn;
  expect_error(bad, "expected b_layout nk");
  bad = d;
  bad.b = QuantizationParams::blockwise(DType::int4, Mapping::symmetric, 32, {1, 1, 1});
  expect_error(bad, "3 scales");
}

TEST(MatmulWeightOnly, OperandsAndTolerance) {
  MatmulDesc d = weight_only(3, 5, 70,
                             QuantizationParams::blockwise(DType::int4, Mapping::symmetric, 32,
                                                           std::vector<float>(15, 1.0f)));
  d.has_bias = true;
  const OpOperands ops = op_operands(OpDesc{OpKind::matmul_weight_only, d});
  ASSERT_EQ(ops.inputs.size(), 3u);
  EXPECT_EQ(ops.inputs[0].bytes, 3u * 70 * 4);
  EXPECT_EQ(ops.inputs[1].bytes, 175u);  // 350 int4 codes
  EXPECT_EQ(ops.inputs[1].role, OperandRole::weight);
  EXPECT_EQ(ops.inputs[2].bytes, 20u);
  ASSERT_EQ(ops.outputs.size(), 1u);
  EXPECT_EQ(ops.outputs[0].comparison, Comparison::nmse);
  EXPECT_EQ(ops.outputs[0].tolerance, 1e-10);
}

}  // namespace
}  // namespace qforge
