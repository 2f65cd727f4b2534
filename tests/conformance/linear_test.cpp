// linear_forward / linear_backward (the quantized nn.Linear of LinearDesc): W int8 symmetric
// per tensor or per output channel, with and without bias, over GEMV and odd-K shapes.
#include <gtest/gtest.h>

#include "harness/fixture.h"
#include "harness/grids.h"
#include "testers/linear_tester.h"

namespace qforge::conformance {
namespace {

struct LinearParam {
  std::string plugin;
  MatmulShape shape;
  std::string name() const { return plugin + "_f32_x_s8_" + shape.name(); }
  friend void PrintTo(const LinearParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<LinearParam> grid() {
  const std::vector<MatmulShape> shapes = {{1, 1, 1},  {1, 16, 33}, {2, 3, 65},
                                           {3, 7, 17}, {8, 31, 64}, {5, 13, 129}};
  std::vector<LinearParam> out;
  for (const auto& plugin : plugins_under_test())
    for (const auto& shape : shapes) out.push_back({plugin, shape});
  return out;
}

class LinearForward : public PluginTest<LinearParam> {};
class LinearBackward : public PluginTest<LinearParam> {};

TEST_P(LinearForward, MatchesReference) {
  const MatmulShape& s = GetParam().shape;
  for (const bool per_channel : {false, true})
    for (const bool bias : {false, true})
      LinearTester()
          .m(s.m)
          .n(s.n)
          .k(s.k)
          .per_channel(per_channel)
          .bias(bias)
          .test_forward(target_, rng_);
  expect_checked();
}

TEST_P(LinearBackward, MatchesReference) {
  const MatmulShape& s = GetParam().shape;
  for (const bool per_channel : {false, true})
    for (const bool bias : {false, true})
      LinearTester()
          .m(s.m)
          .n(s.n)
          .k(s.k)
          .per_channel(per_channel)
          .bias(bias)
          .test_backward(target_, rng_);
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, LinearForward, ::testing::ValuesIn(grid()),
                         param_name<LinearParam>);
INSTANTIATE_TEST_SUITE_P(Conformance, LinearBackward, ::testing::ValuesIn(grid()),
                         param_name<LinearParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LinearForward);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LinearBackward);

}  // namespace
}  // namespace qforge::conformance
