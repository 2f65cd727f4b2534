// requantize: int32 -> int8/uint8, float_multiplier and fixed_point modes, per tensor and per
// channel on every axis. Exact.
#include <gtest/gtest.h>

#include "harness/fixture.h"
#include "testers/requantize_tester.h"

namespace qforge::conformance {
namespace {

struct RequantizeParam {
  std::string plugin;
  DType out_dtype;
  bool per_channel;
  Shape shape;
  std::string name() const {
    return plugin + "_int32_to_" + std::string(qforge::name(out_dtype)) +
           (per_channel ? "_per_channel_" : "_per_tensor_") + shape_name(shape);
  }
  friend void PrintTo(const RequantizeParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<RequantizeParam> grid() {
  std::vector<RequantizeParam> out;
  const std::vector<Shape> shapes = {{1}, {7}, {4, 33}, {3, 5, 17}};
  for (const auto& plugin : plugins_under_test())
    for (const DType dtype : {DType::int8, DType::uint8})
      for (const bool per_channel : {false, true})
        for (const auto& shape : shapes) out.push_back({plugin, dtype, per_channel, shape});
  return out;
}

class Requantize : public PluginTest<RequantizeParam> {};

TEST_P(Requantize, MatchesReference) {
  const RequantizeParam& p = GetParam();
  std::vector<std::optional<int>> axes;
  if (p.per_channel)
    for (int axis = 0; axis < static_cast<int>(p.shape.size()); ++axis) axes.push_back(axis);
  else axes.push_back(std::nullopt);
  for (const auto mode : {RequantMode::float_multiplier, RequantMode::fixed_point})
    for (const auto& axis : axes)
      for (int repeat = 0; repeat < 3; ++repeat) {
        RequantizeTester t;
        t.shape(p.shape).out_dtype(p.out_dtype).mode(mode);
        if (axis) t.axis(*axis);
        t.test(target_, rng_);
      }
  // Exact ties in every element, so a backend that runs one mode for the other always fails.
  for (const auto mode : {RequantMode::float_multiplier, RequantMode::fixed_point}) {
    RequantizeTester t;
    t.shape(p.shape).out_dtype(p.out_dtype).mode(mode).ties_only();
    if (p.per_channel) t.axis(0);
    t.test(target_, rng_);
  }
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, Requantize, ::testing::ValuesIn(grid()),
                         param_name<RequantizeParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Requantize);

}  // namespace
}  // namespace qforge::conformance
