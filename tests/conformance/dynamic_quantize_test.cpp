// dynamic_quantize_linear (ONNX DynamicQuantizeLinear): mixed-sign, one-signed, all-zero,
// constant and tiny inputs, and inputs with NaN/inf (matched to whatever the reference does:
// a result, or a refusal). Codes and the returned (s, z) must be identical.
#include <gtest/gtest.h>

#include "harness/fixture.h"
#include "testers/dynamic_quantize_tester.h"

namespace qforge::conformance {
namespace {

struct DynamicParam {
  std::string plugin;
  Shape shape;
  std::string name() const { return plugin + "_float32_to_uint8_" + shape_name(shape); }
  friend void PrintTo(const DynamicParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<DynamicParam> grid() {
  const std::vector<Shape> shapes = {{}, {1}, {2}, {7}, {33}, {4, 17}, {3, 5, 64}, {1031}};
  std::vector<DynamicParam> out;
  for (const auto& plugin : plugins_under_test())
    for (const auto& shape : shapes) out.push_back({plugin, shape});
  return out;
}

class DynamicQuantizeLinear : public PluginTest<DynamicParam> {};

TEST_P(DynamicQuantizeLinear, MatchesReference) {
  for (const auto data :
       {DynamicData::mixed, DynamicData::all_positive, DynamicData::all_negative,
        DynamicData::all_zero, DynamicData::constant, DynamicData::tiny, DynamicData::non_finite})
    for (int repeat = 0; repeat < 2; ++repeat)
      DynamicQuantizeTester().shape(GetParam().shape).data(data).test(target_, rng_);
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, DynamicQuantizeLinear, ::testing::ValuesIn(grid()),
                         param_name<DynamicParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DynamicQuantizeLinear);

}  // namespace
}  // namespace qforge::conformance
