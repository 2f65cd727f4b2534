// matmul_dequant (fused dequantization): u8xs8, s8xs8, u8xu8, s8xs4, u8xu4 over the matmul
// shape grid; kn and nk layouts; sa per tensor or per row; sb per tensor, per column or
// block-wise along K (nk only; blocks of 32 and 16, partial last blocks, affine and symmetric:
// ggml's Q8_0/Q4_0/Q4_1 shapes); with and without bias; float32 output, and float16/bfloat16
// where the plugin claims them; A's params given at run (MatmulDesc::a_params_at_run: per-tensor
// A valid, per-row A refused). Float outputs meet tolerance::matmul_dequant.
#include <gtest/gtest.h>

#include "harness/fixture.h"
#include "harness/grids.h"
#include "testers/matmul_tester.h"

namespace qforge::conformance {
namespace {

struct MatmulDequantParam {
  std::string plugin;
  DTypePair dtypes;
  MatmulShape shape;
  std::string name() const { return plugin + "_" + dtypes.name() + "_" + shape.name(); }
  friend void PrintTo(const MatmulDequantParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<MatmulDequantParam> grid() {
  const std::vector<DTypePair> pairs = {{DType::uint8, DType::int8},
                                        {DType::int8, DType::int8},
                                        {DType::uint8, DType::uint8},
                                        {DType::int8, DType::int4},
                                        {DType::uint8, DType::uint4}};
  std::vector<MatmulDequantParam> out;
  for (const auto& plugin : plugins_under_test())
    for (const auto& pair : pairs)
      for (const auto& shape : matmul_shapes()) out.push_back({plugin, pair, shape});
  return out;
}

struct BScheme {
  Granularity granularity;
  Mapping mapping;
  std::int64_t block;
};

class MatmulDequant : public PluginTest<MatmulDequantParam> {};

TEST_P(MatmulDequant, MatchesReference) {
  const MatmulDequantParam& p = GetParam();
  const std::vector<BScheme> b_schemes = {{Granularity::per_tensor, Mapping::affine, 0},
                                          {Granularity::per_channel, Mapping::affine, 0},
                                          {Granularity::block, Mapping::symmetric, 32},
                                          {Granularity::block, Mapping::affine, 32},
                                          {Granularity::block, Mapping::symmetric, 16}};
  for (const auto layout : {MatrixLayout::kn, MatrixLayout::nk})
    for (const bool a_per_row : {false, true})
      for (const auto& b : b_schemes) {
        if (b.granularity == Granularity::block && layout != MatrixLayout::nk) continue;
        for (const bool bias : {false, true})
          for (const auto out : {FloatType::f32, FloatType::f16, FloatType::bf16})
            for (const bool at_run : {false, true}) {
              // A's params given at run: float32 output is enough to cover the flag.
              if (at_run && out != FloatType::f32) continue;
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
                  .bias(bias)
                  .out_type(out)
                  .a_params_at_run(at_run)
                  .test_matmul_dequant(target_, rng_);
            }
      }
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, MatmulDequant, ::testing::ValuesIn(grid()),
                         param_name<MatmulDequantParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulDequant);

}  // namespace
}  // namespace qforge::conformance
