// matmul_integer (ONNX MatMulInteger): dtype pairs u8xs8, s8xs8, u8xu8, s8xu8, int4/uint4 B,
// s4xs4 and int16, over the matmul shape grid; kn and nk layouts, zero points per tensor or per
// row of A / per column of B / per block of B (nk only; blocks of 32 affine and of 16 symmetric,
// partial last blocks where K is not a multiple), affine and symmetric B, random and extreme
// codes. Exact int32.
#include <gtest/gtest.h>

#include "harness/fixture.h"
#include "harness/grids.h"
#include "testers/matmul_tester.h"

namespace qforge::conformance {
namespace {

struct MatmulIntegerParam {
  std::string plugin;
  DTypePair dtypes;
  MatmulShape shape;
  std::string name() const { return plugin + "_" + dtypes.name() + "_" + shape.name(); }
  friend void PrintTo(const MatmulIntegerParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<MatmulIntegerParam> grid() {
  const std::vector<DTypePair> pairs = {
      {DType::uint8, DType::int8}, {DType::int8, DType::int8},   {DType::uint8, DType::uint8},
      {DType::int8, DType::uint8}, {DType::int8, DType::int4},   {DType::uint8, DType::uint4},
      {DType::int4, DType::int4},  {DType::int16, DType::int16}, {DType::int16, DType::int8}};
  std::vector<MatmulIntegerParam> out;
  for (const auto& plugin : plugins_under_test())
    for (const auto& pair : pairs)
      for (const auto& shape : matmul_shapes()) out.push_back({plugin, pair, shape});
  return out;
}

class MatmulInteger : public PluginTest<MatmulIntegerParam> {};

TEST_P(MatmulInteger, MatchesReference) {
  const MatmulIntegerParam& p = GetParam();
  struct BScheme {
    Granularity granularity;
    Mapping mapping;
    std::int64_t block;
  };
  const std::vector<BScheme> b_schemes = {{Granularity::per_tensor, Mapping::affine, 0},
                                          {Granularity::per_tensor, Mapping::symmetric, 0},
                                          {Granularity::per_channel, Mapping::affine, 0},
                                          {Granularity::per_channel, Mapping::symmetric, 0},
                                          {Granularity::block, Mapping::affine, 32},
                                          {Granularity::block, Mapping::symmetric, 16}};
  for (const auto layout : {MatrixLayout::kn, MatrixLayout::nk})
    for (const bool a_per_row : {false, true})
      for (const auto& b : b_schemes) {
        if (b.granularity == Granularity::block && layout != MatrixLayout::nk) continue;
        for (const bool extremes : {false, true})
          MatmulTester()
              .m(p.shape.m)
              .n(p.shape.n)
              .k(p.shape.k)
              .a_dtype(p.dtypes.a)
              .b_dtype(p.dtypes.b)
              .b_layout(layout)
              .a_per_row(a_per_row)
              .b_granularity(b.granularity)
              .b_mapping(b.mapping)
              .b_block_size(b.block > 0 ? b.block : 32)
              .extremes(extremes)
              .test_matmul_integer(target_, rng_);
      }
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, MatmulInteger, ::testing::ValuesIn(grid()),
                         param_name<MatmulIntegerParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulInteger);

}  // namespace
}  // namespace qforge::conformance
