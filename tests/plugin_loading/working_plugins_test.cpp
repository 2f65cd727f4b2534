// Broken plugins never take working ones down: after every failure kind has been met, the
// shipped scalar plugin still loads from bin/ and computes exactly what the reference does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "qforge/registry.h"
#include "test_support.h"

namespace qforge::test {
namespace {

// ONNX MatMulInteger's example (DESIGN.md): A uint8 with za = 12, B uint8 with zb = 0.
void expect_design_matmul(QuantizationOps& ops) {
  const MatmulDesc desc{.m = 4,
                        .n = 2,
                        .k = 3,
                        .a = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 12),
                        .b = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0),
                        .y = std::nullopt};
  const std::vector<std::uint8_t> a = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0};
  const std::vector<std::uint8_t> b = {1, 4, 2, 5, 3, 6};
  std::vector<std::int32_t> c(8, -7);
  ASSERT_TRUE(ops.supports({OpKind::matmul_integer, desc}).supported);
  ops.matmul_integer(desc, a.data(), b.data(), c.data());
  EXPECT_THAT(c, ::testing::ElementsAre(-38, -83, -44, -98, -50, -113, -56, -128));
  EXPECT_EQ(ops.plan({OpKind::matmul_integer, desc}, {})->kernel(), "scalar_reference");
}

TEST(WorkingPlugins, ScalarPluginLoadsNextToEveryBrokenOne) {
  LogCapture log;
  PluginRegistry registry;
  registry.load_from({broken_plugin_dir(), cpu_scalar_file()});
  EXPECT_EQ(registry.failures().size(), 7u) << log.text();
  ASSERT_EQ(registry.plugins().size(), 1u) << log.text();
  QuantizationOps* ops = registry.find("cpu_scalar");
  ASSERT_NE(ops, nullptr);
  EXPECT_EQ(ops->name(), "cpu_scalar");
  EXPECT_TRUE(ops->availability().usable);
  expect_design_matmul(*ops);
}

TEST(WorkingPlugins, ScalarPluginMatchesReferenceOnRandomInput) {
  const auto seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (replay with QFORGE_TEST_SEED)");
  PluginRegistry registry;
  registry.load_from({broken_plugin_dir(), plugin_dir()});
  QuantizationOps* ops = registry.find("cpu_scalar");
  ASSERT_NE(ops, nullptr);

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::uniform_int_distribution<std::int64_t> extent(1, 67);
  const Shape shape = {extent(rng), extent(rng)};
  const auto n = static_cast<std::size_t>(element_count(shape));
  std::vector<float> x(n);
  for (auto& v : x) v = value(rng);
  const QuantizeDesc desc{shape, QuantizationParams::per_tensor_affine(DType::int8, 0.037f, -5)};
  std::vector<std::int8_t> got(n, 99), want(n, -99);
  ops->quantize(desc, x.data(), got.data());
  reference::quantize(desc, x.data(), want.data());
  EXPECT_EQ(got, want) << "shape " << to_string(shape);
}

TEST(WorkingPlugins, OpsOutliveTheirRegistry) {
  std::shared_ptr<QuantizationOps> ops;
  {
    PluginRegistry registry;
    ASSERT_TRUE(registry.load_file(cpu_scalar_file()));
    ops = registry.plugins()[0].ops;
  }
  // The shared_ptr's deleter holds the library: its code is still mapped.
  expect_design_matmul(*ops);
}

TEST(WorkingPlugins, GlobalRegistryFindsTheScalarPluginNextToTheExecutable) {
  PluginRegistry& global = PluginRegistry::global();
  EXPECT_EQ(&global, &PluginRegistry::global());
  QuantizationOps* ops = global.find("cpu_scalar");
  ASSERT_NE(ops, nullptr);
  expect_design_matmul(*ops);
}

TEST(WorkingPlugins, FixturePluginLoadsAndRefusesOps) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(fixture_file()));
  QuantizationOps* ops = registry.find("fixture");
  ASSERT_NE(ops, nullptr);
  const Support s = ops->supports({OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{{4}}});
  EXPECT_FALSE(s.supported);
  EXPECT_THAT(s.reason, ::testing::HasSubstr("test fixture"));
  std::vector<float> x(4);
  std::vector<std::uint8_t> y(4);
  try {
    ops->dynamic_quantize_linear(DynamicQuantizeDesc{{4}}, x.data(), y.data());
    ADD_FAILURE() << "expected qforge::Error";
  } catch (const Error& e) {
    // An exception thrown in the plugin is caught here: one qforge::Error type across the
    // boundary, because both sides use libqforge_core's.
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
}

}  // namespace
}  // namespace qforge::test
