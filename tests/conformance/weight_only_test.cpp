// matmul_weight_only (float A, int4/uint4/int8/uint8 B, float Y: ONNX Runtime's MatMulNBits)
// over the matmul shape grid plus MiniLM-like ones: B in blocks of 32 and 16 along K (partial
// last blocks where K is not a multiple), per column and per tensor; affine and symmetric; with
// and without bias. Y meets tolerance::kWeightOnly.
#include <gtest/gtest.h>

#include "harness/fixture.h"
#include "harness/grids.h"
#include "testers/weight_only_tester.h"

namespace qforge::conformance {
namespace {

struct WeightOnlyParam {
  std::string plugin;
  DType b;
  MatmulShape shape;
  std::string name() const {
    return plugin + "_f32x" + DTypePair::short_name(b) + "_" + shape.name();
  }
  friend void PrintTo(const WeightOnlyParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<WeightOnlyParam> grid() {
  std::vector<MatmulShape> shapes = matmul_shapes();
  shapes.push_back({4, 24, 384});  // MiniLM's hidden size, a few rows
  std::vector<WeightOnlyParam> out;
  for (const auto& plugin : plugins_under_test())
    for (const DType b : {DType::int4, DType::uint4, DType::int8, DType::uint8})
      for (const auto& shape : shapes) out.push_back({plugin, b, shape});
  return out;
}

struct BScheme {
  Granularity granularity;
  Mapping mapping;
  std::int64_t block;
  MatrixLayout layout;
};

class WeightOnly : public PluginTest<WeightOnlyParam> {};

TEST_P(WeightOnly, MatchesReference) {
  const WeightOnlyParam& p = GetParam();
  const BScheme schemes[] = {{Granularity::block, Mapping::symmetric, 32, MatrixLayout::nk},
                             {Granularity::block, Mapping::affine, 32, MatrixLayout::nk},
                             {Granularity::block, Mapping::affine, 16, MatrixLayout::nk},
                             {Granularity::per_channel, Mapping::affine, 0, MatrixLayout::nk},
                             {Granularity::per_channel, Mapping::symmetric, 0, MatrixLayout::kn},
                             {Granularity::per_tensor, Mapping::affine, 0, MatrixLayout::kn}};
  for (const auto& s : schemes)
    for (const bool bias : {false, true})
      WeightOnlyTester()
          .m(p.shape.m)
          .n(p.shape.n)
          .k(p.shape.k)
          .b_dtype(p.b)
          .b_layout(s.layout)
          .b_granularity(s.granularity)
          .b_mapping(s.mapping)
          .b_block_size(s.block > 0 ? s.block : 32)
          .bias(bias)
          .test(target_, rng_);
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, WeightOnly, ::testing::ValuesIn(grid()),
                         param_name<WeightOnlyParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WeightOnly);

}  // namespace
}  // namespace qforge::conformance
