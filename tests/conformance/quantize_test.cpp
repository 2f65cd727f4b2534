// quantize and dequantize: a test per dtype x shape; inside, every mapping (affine, symmetric,
// logarithmic) x granularity (per tensor; per channel on every axis, negative axis included;
// blocks of 1, 3 and 32 along the last axis with partial last blocks), float32/float16/bfloat16
// input, with and without NaN, +-inf and huge values. Codes must equal the reference bit for bit;
// dequantize's float32 too (tolerance::kDequantize).
#include <gtest/gtest.h>

#include "harness/fixture.h"
#include "testers/quantize_tester.h"

namespace qforge::conformance {
namespace {

struct QuantizeParam {
  std::string plugin;
  DType dtype;
  Shape shape;
  std::string name() const {
    return plugin + "_" + std::string(qforge::name(dtype)) + "_" + shape_name(shape);
  }
  friend void PrintTo(const QuantizeParam& p, std::ostream* os) { *os << p.name(); }
};

// Whether qforge accepts this dtype with this mapping at all (binary is symmetric only, ...):
// asked of QuantizationParams itself, so the grid follows the core's rules.
bool valid_combination(DType dtype, Mapping mapping) {
  try {
    QuantizationParams(dtype, Scheme{mapping, Granularity::per_tensor}, {1.0f});
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Scalar, empty, 1..8, 2^j +- 1, primes, ranks 0 to 4.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> list = {{},     {0},     {1},       {5},          {33},
                                          {4, 8}, {3, 17}, {2, 5, 7}, {1, 3, 2, 65}};
  return list;
}

std::vector<QuantizeParam> grid() {
  std::vector<QuantizeParam> out;
  for (const auto& plugin : plugins_under_test())
    for (const auto& tr : kDTypeTraits)
      for (const auto& shape : shapes()) out.push_back({plugin, tr.dtype, shape});
  return out;
}

// Every scheme a tensor of this shape can carry: each valid mapping per tensor, per channel on
// every axis (and -1), and in blocks of 1, 3 and 32 along the last axis (partial last blocks).
// Channels and blocks need at least one axis and no empty one.
std::vector<Scheme> schemes(DType dtype, const Shape& shape) {
  std::vector<Scheme> out;
  const bool has_axes = !shape.empty() && element_count(shape) > 0;
  for (const Mapping mapping : {Mapping::affine, Mapping::symmetric, Mapping::logarithmic}) {
    if (!valid_combination(dtype, mapping)) continue;
    out.push_back({mapping, Granularity::per_tensor});
    if (!has_axes) continue;
    for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis)
      out.push_back({mapping, Granularity::per_channel, axis});
    out.push_back({mapping, Granularity::per_channel, -1});
    for (const std::int64_t block : {1, 3, 32})
      out.push_back({mapping, Granularity::block, 0, block});
  }
  return out;
}

class Quantize : public PluginTest<QuantizeParam> {};
class Dequantize : public PluginTest<QuantizeParam> {};

TEST_P(Quantize, MatchesReference) {
  const QuantizeParam& p = GetParam();
  for (const Scheme& scheme : schemes(p.dtype, p.shape))
    for (const FloatType input : {FloatType::f32, FloatType::f16, FloatType::bf16})
      for (const bool specials : {false, true})
        QuantizeTester()
            .dtype(p.dtype)
            .scheme(scheme)
            .shape(p.shape)
            .float_type(input)
            .specials(specials)
            .test_quantize(target_, rng_);
  expect_checked();
}

TEST_P(Dequantize, MatchesReference) {
  const QuantizeParam& p = GetParam();
  for (const Scheme& scheme : schemes(p.dtype, p.shape))
    for (int repeat = 0; repeat < 2; ++repeat)
      QuantizeTester().dtype(p.dtype).scheme(scheme).shape(p.shape).test_dequantize(target_, rng_);
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, Quantize, ::testing::ValuesIn(grid()),
                         param_name<QuantizeParam>);
INSTANTIATE_TEST_SUITE_P(Conformance, Dequantize, ::testing::ValuesIn(grid()),
                         param_name<QuantizeParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Quantize);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Dequantize);

}  // namespace
}  // namespace qforge::conformance
