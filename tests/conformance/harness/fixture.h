// The base fixture of every conformance test: value-parameterised over the plugins found at
// start-up (plugins.h), so each backend's results are reported apart, e.g.
//   QuantizeConformance.Run/cpu_scalar_int8_affine_per_channel_3x17
//
// SetUp finds the plugin, skips (GTEST_SKIP with the plugin's reason) when availability() says
// it cannot run here, and derives the test's Rng from the run seed. The seed is attached to the
// test as a scoped trace, so it is printed in every failure message.
//
// A test body runs its cases through run_case() and ends with expect_checked(): a test in
// which no case reached a comparison fails (it would be a test that cannot fail), unless the
// plugin rejected every case, which is a skip with the first reason.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "harness/op_case.h"
#include "harness/plugins.h"
#include "harness/seed.h"
#include "harness/summary.h"

namespace qforge::conformance {

template <class Param>
class PluginTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const std::string& plugin = this->GetParam().plugin;
    QuantizationOps* ops = find_plugin(plugin);
    ASSERT_NE(ops, nullptr) << "plugin " << plugin << " is no longer in the registry\n"
                            << registry_report();
    const Availability availability = ops->availability();
    if (!availability.usable) GTEST_SKIP() << plugin << " cannot run here: " << availability.reason;
    target_.name = plugin;
    target_.ops = ops;
    target_.must_support = plugin == kMustSupportEverything;
    rng_ = rng_for_current_test();
  }

  void TearDown() override {
    if (target_.ops == nullptr) return;  // skipped in SetUp
    const Tally& t = target_.tally;
    ::testing::Test::RecordProperty("compared", t.compared);
    ::testing::Test::RecordProperty("refusals_checked", t.refusals_checked);
    ::testing::Test::RecordProperty("rejected", t.rejected);
    ::testing::Test::RecordProperty("launches_unavailable", t.launches_unavailable);
    record_tally(target_.name, t);
  }

  // Fails a test that checked nothing; skips one whose every case the plugin rejected.
  void expect_checked() {
    const Tally& t = target_.tally;
    if (::testing::Test::HasFailure() || t.compared + t.refusals_checked > 0) return;
    if (t.rejected > 0)
      GTEST_SKIP() << target_.name << " supports none of the " << t.rejected
                   << " cases of this test; first: " << t.first_rejection;
    FAIL() << "no case of this test reached a comparison (" << t.invalid
           << " rejected by the reference itself): the test checked nothing";
  }

  Target target_;
  Rng rng_;

 private:
  ::testing::ScopedTrace seed_trace_{__FILE__, __LINE__,
                                     "replay with " + seed_text() + " and this test's filter"};
};

// Test-name pieces: gtest names allow only [A-Za-z0-9_].
inline std::string shape_name(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "x" : "") + std::to_string(shape[i]);
  return out;
}

template <class Param>
std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return info.param.name();
}

}  // namespace qforge::conformance
