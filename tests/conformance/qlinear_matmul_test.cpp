// qlinear_matmul (ONNX QLinearMatMul): u8xs8, s8xs8, u8xu8 over the matmul shape grid; int8 and
// uint8 outputs; float_multiplier and fixed_point (TFLite) requantization; kn and nk; scales
// per tensor or per row of A / per column of B; with an int32 bias and a fused Relu, Relu6 or Clip.
// Exact.
#include <gtest/gtest.h>

#include "harness/fixture.h"
#include "harness/grids.h"
#include "testers/matmul_tester.h"

namespace qforge::conformance {
namespace {

struct QLinearParam {
  std::string plugin;
  DTypePair dtypes;
  MatmulShape shape;
  std::string name() const { return plugin + "_" + dtypes.name() + "_" + shape.name(); }
  friend void PrintTo(const QLinearParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<QLinearParam> grid() {
  const std::vector<DTypePair> pairs = {
      {DType::uint8, DType::int8}, {DType::int8, DType::int8}, {DType::uint8, DType::uint8}};
  std::vector<QLinearParam> out;
  for (const auto& plugin : plugins_under_test())
    for (const auto& pair : pairs)
      for (const auto& shape : matmul_shapes()) out.push_back({plugin, pair, shape});
  return out;
}

class QLinearMatmul : public PluginTest<QLinearParam> {};

TEST_P(QLinearMatmul, MatchesReference) {
  const QLinearParam& p = GetParam();
  for (const auto mode : {RequantMode::float_multiplier, RequantMode::fixed_point})
    for (const DType y : {DType::int8, DType::uint8})
      for (const auto layout : {MatrixLayout::kn, MatrixLayout::nk})
        for (const bool a_per_row : {false, true})
          for (const auto b_granularity : {Granularity::per_tensor, Granularity::per_channel})
            MatmulTester()
                .m(p.shape.m)
                .n(p.shape.n)
                .k(p.shape.k)
                .a_dtype(p.dtypes.a)
                .b_dtype(p.dtypes.b)
                .b_layout(layout)
                .a_per_row(a_per_row)
                .b_granularity(b_granularity)
                .y_dtype(y)
                .requant_mode(mode)
                .test_qlinear_matmul(target_, rng_);
  expect_checked();
}

// The fused form of Gemm + bias + Relu / Relu6 / Clip between quantized layers: an int32 bias at
// sa * sb[n] and a clamp of the codes (a model's int8 path).
TEST_P(QLinearMatmul, BiasAndActivationMatchReference) {
  const QLinearParam& p = GetParam();
  for (const auto mode : {RequantMode::float_multiplier, RequantMode::fixed_point})
    for (const DType y : {DType::int8, DType::uint8})
      for (const auto act : {ConvActivation::none, ConvActivation::relu, ConvActivation::relu6,
                             ConvActivation::clamp})
        for (const auto b_granularity : {Granularity::per_tensor, Granularity::per_channel})
          MatmulTester()
              .m(p.shape.m)
              .n(p.shape.n)
              .k(p.shape.k)
              .a_dtype(p.dtypes.a)
              .b_dtype(p.dtypes.b)
              .b_layout(b_granularity == Granularity::per_channel ? MatrixLayout::nk
                                                                  : MatrixLayout::kn)
              .b_granularity(b_granularity)
              .y_dtype(y)
              .requant_mode(mode)
              .bias(act != ConvActivation::relu6)
              .activation(act)
              .test_qlinear_matmul(target_, rng_);
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, QLinearMatmul, ::testing::ValuesIn(grid()),
                         param_name<QLinearParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(QLinearMatmul);

}  // namespace
}  // namespace qforge::conformance
