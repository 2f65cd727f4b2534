// The registry against C plugins with one fault each (fixtures/boundary_fixture.c): each load
// failure is named, and a status from make_plan reaches the caller as a qforge::Error with the
// plugin's code and message.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "qforge/error.h"
#include "qforge/plugin/c_api.h"
#include "qforge/registry.h"

namespace qforge {
namespace {

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(QFORGE_C_FIXTURE_DIR) / ("libqforge_plugin_c_" + name + ".so");
}

// Loads one fixture that must fail and returns its failure.
PluginFailure load_failure(const std::string& name) {
  PluginRegistry registry;
  EXPECT_FALSE(registry.load_file(fixture(name))) << name << " loaded";
  EXPECT_TRUE(registry.plugins().empty());
  if (registry.failures().size() != 1) {
    ADD_FAILURE() << name << ": expected one failure, got " << registry.failures().size();
    return {};
  }
  return registry.failures().front();
}

void expect_contains(const std::string& text, const std::string& needle) {
  EXPECT_NE(text.find(needle), std::string::npos)
      << "\"" << text << "\" lacks \"" << needle << "\"";
}

TEST(CBoundary, TooNewVersionIsRefused) {
  const PluginFailure f = load_failure("too_new");
  EXPECT_EQ(f.kind, PluginFailureKind::abi_mismatch) << f.message;
  expect_contains(f.message, "C plugin API version " + std::to_string(QFORGE_C_API_VERSION + 1));
  expect_contains(f.message, "versions 1 to " + std::to_string(QFORGE_C_API_VERSION));
}

TEST(CBoundary, TooSmallTableIsRefused) {
  const PluginFailure f = load_failure("too_small");
  EXPECT_EQ(f.kind, PluginFailureKind::abi_mismatch) << f.message;
  expect_contains(f.message, "C plugin table has");
  expect_contains(f.message, "plan_destroy");
}

TEST(CBoundary, NullTableIsRefused) {
  const PluginFailure f = load_failure("null_table");
  EXPECT_EQ(f.kind, PluginFailureKind::missing_entry) << f.message;
  expect_contains(f.message, "qforge_plugin_c_entry(" + std::to_string(QFORGE_C_API_VERSION) +
                                 ") returned NULL");
}

// A table of version 2 knows qforge_c_matmul_desc up to the clamp: the host keeps a
// matmul_dequant with A's params given at run (version 3) from it, which it would read as the
// plain op on the descriptor's placeholder params.
TEST(CBoundary, OlderTableIsNotAskedForAParamsAtRun) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(fixture("version_2")))
      << (registry.failures().empty() ? "" : registry.failures().front().message);
  QuantizationOps* ops = registry.find("c_fixture_version_2");
  ASSERT_NE(ops, nullptr);
  MatmulDesc d{.m = 2,
               .n = 3,
               .k = 4,
               .a = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3),
               .b = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f)};
  const Support plain = ops->supports(OpDesc{OpKind::matmul_dequant, d});
  EXPECT_TRUE(plain.supported) << plain.reason;
  d.a_params_at_run = true;
  const OpDesc flagged{OpKind::matmul_dequant, d};
  const Support s = ops->supports(flagged);
  EXPECT_FALSE(s.supported);
  expect_contains(s.reason, "C API version 2");
  expect_contains(s.reason, "a_params_at_run");
  try {
    ops->plan(flagged, {});
    ADD_FAILURE() << "plan() sent a_params_at_run to a version-2 table";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    expect_contains(e.what(), "a_params_at_run");
  }
}

class PlanError : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registry_.load_file(fixture("plan_error")))
        << (registry_.failures().empty() ? "" : registry_.failures().front().message);
    ops_ = registry_.find("c_fixture_plan_error");
    ASSERT_NE(ops_, nullptr);
  }
  static QuantizeDesc desc() {
    return {{4}, QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3), FloatType::f32};
  }
  PluginRegistry registry_;
  QuantizationOps* ops_ = nullptr;
};

TEST_F(PlanError, StatusBecomesErrorWithCodeAndMessage) {
  const OpDesc op{OpKind::quantize, desc()};
  const Support s = ops_->supports(op);
  ASSERT_TRUE(s.supported) << s.reason;
  EXPECT_EQ(s.kernels, std::vector<std::string>{"fixture_kernel"});
  try {
    ops_->plan(op, {});
    ADD_FAILURE() << "plan() succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::backend);
    EXPECT_STREQ(e.what(), "boundary fixture: make_plan fails on purpose (code 7431)");
  }
}

TEST_F(PlanError, PerCallOpReportsTheSameError) {
  const std::vector<float> x(4, 1.0f);
  std::vector<std::uint8_t> q(4);
  try {
    ops_->quantize(desc(), x.data(), q.data());
    ADD_FAILURE() << "quantize() succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::backend);
    expect_contains(e.what(), "code 7431");
  }
}

TEST_F(PlanError, UnsupportedStatusIsAReasonNotAnError) {
  const OpDesc op{OpKind::dequantize, desc()};
  const Support s = ops_->supports(op);
  EXPECT_FALSE(s.supported);
  EXPECT_EQ(s.reason, "boundary fixture: quantize only");
  try {
    ops_->plan(op, {});
    ADD_FAILURE() << "plan() succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_STREQ(e.what(), "boundary fixture: quantize only");
  }
}

TEST_F(PlanError, HostChecksTheRequestFirst) {
  const OpDesc op{OpKind::quantize, desc()};
  try {
    ops_->plan(op, {3, "", {}});
    ADD_FAILURE() << "plan() accepted device 3";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    expect_contains(e.what(), "device 3; expected 0 to 0");
  }
  try {
    ops_->plan(op, {0, "other_kernel", {}});
    ADD_FAILURE() << "plan() accepted an unknown kernel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    expect_contains(e.what(), "expected one of fixture_kernel");
  }
}

}  // namespace
}  // namespace qforge
