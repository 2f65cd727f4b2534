// matmul_integer (ONNX MatMulInteger): dtype pairs u8xs8, s8xs8, u8xu8, s8xu8, int4/uint4 B,
// s4xs4 and int16, over the matmul shape grid; kn and nk layouts, zero points per tensor or per
// row of A / per column of B, affine and symmetric B, random and extreme codes. Exact int32.
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
  for (const auto layout : {MatrixLayout::kn, MatrixLayout::nk})
    for (const bool a_per_row : {false, true})
      for (const auto b_granularity : {Granularity::per_tensor, Granularity::per_channel})
        for (const auto b_mapping : {Mapping::affine, Mapping::symmetric})
          for (const bool extremes : {false, true})
            MatmulTester()
                .m(p.shape.m)
                .n(p.shape.n)
                .k(p.shape.k)
                .a_dtype(p.dtypes.a)
                .b_dtype(p.dtypes.b)
                .b_layout(layout)
                .a_per_row(a_per_row)
                .b_granularity(b_granularity)
                .b_mapping(b_mapping)
                .extremes(extremes)
                .test_matmul_integer(target_, rng_);
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, MatmulInteger, ::testing::ValuesIn(grid()),
                         param_name<MatmulIntegerParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulInteger);

}  // namespace
}  // namespace qforge::conformance
