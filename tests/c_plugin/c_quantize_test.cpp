// The example plugin written in C (plugins/examples/c_quantize) through the registry: it loads
// from QFORGE_PLUGIN_PATH, names its device, refuses what it does not run, and its per-call ops
// and plans match qforge::reference bit for bit on fresh random data. The conformance suite
// runs against it too (ctest conformance_c_quantize).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "qforge/registry.h"

namespace qforge {
namespace {

std::uint64_t test_seed() {
  const char* env = std::getenv("QFORGE_TEST_SEED");
  return env ? std::stoull(env) : std::random_device{}();
}

class CQuantize : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.load_from({QFORGE_C_EXAMPLE_DIR});
    ops_ = registry_.find("c_quantize");
    ASSERT_NE(ops_, nullptr) << (registry_.failures().empty()
                                     ? std::string("not found in ") + QFORGE_C_EXAMPLE_DIR
                                     : registry_.failures().front().message);
  }
  PluginRegistry registry_;
  QuantizationOps* ops_ = nullptr;
};

TEST_F(CQuantize, IdentityAndDevice) {
  EXPECT_EQ(ops_->name(), "c_quantize");
  EXPECT_EQ(ops_->version(), "0.1.0");
  EXPECT_TRUE(ops_->availability().usable);
  const auto devices = ops_->devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].name, "host CPU");
  EXPECT_EQ(devices[0].kind, "cpu");
  EXPECT_EQ(devices[0].properties.at("language"), "C11");
  EXPECT_FALSE(ops_->set_option("threads", "2")) << "the example has no options";
}

TEST_F(CQuantize, RefusesWhatItDoesNotRun) {
  const Shape shape{2, 3};
  const auto per_channel =
      QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, {0.5f, 0.25f});
  const Support s = ops_->supports({OpKind::quantize, QuantizeDesc{shape, per_channel}});
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("per-tensor"), std::string::npos) << s.reason;
  const auto int4 = QuantizationParams::per_tensor_affine(DType::int4, 0.5f, 1);
  EXPECT_FALSE(ops_->supports({OpKind::quantize, QuantizeDesc{shape, int4}}).supported);
  const auto u8 = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 1);
  EXPECT_FALSE(
      ops_->supports({OpKind::quantize, QuantizeDesc{shape, u8, FloatType::f16}}).supported);
  const std::vector<float> x(6, 1.0f);
  std::vector<std::uint8_t> q(6);
  try {
    ops_->quantize(QuantizeDesc{shape, per_channel}, x.data(), q.data());
    ADD_FAILURE() << "per-channel quantize ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
  }
}

// Random values around the range, with the edge cases the rounding and clamping must get right:
// exact halves, values far out of range, infinities and NaN.
std::vector<float> random_inputs(std::mt19937_64& rng, std::size_t n, float scale) {
  std::normal_distribution<float> normal(0.0f, 100.0f * scale);
  std::uniform_int_distribution<int> code(-300, 300);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (i % 8) {
      case 0: x[i] = (static_cast<float>(code(rng)) + 0.5f) * scale; break;
      case 1: x[i] = static_cast<float>(code(rng)) * scale; break;
      default: x[i] = normal(rng); break;
    }
  }
  if (n > 3) {
    x[0] = std::numeric_limits<float>::infinity();
    x[1] = -std::numeric_limits<float>::infinity();
    x[2] = std::numeric_limits<float>::quiet_NaN();
    x[3] = -0.0f;
  }
  return x;
}

TEST_F(CQuantize, MatchesReferenceBitForBit) {
  const auto seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (replay with QFORGE_TEST_SEED)");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> scale_dist(0.001f, 2.0f);
  std::uniform_int_distribution<std::int64_t> extent(1, 300);
  for (const DType dtype : {DType::int8, DType::uint8})
    for (const Mapping mapping : {Mapping::affine, Mapping::symmetric})
      for (int repeat = 0; repeat < 5; ++repeat) {
        const float scale = scale_dist(rng);
        const Shape shape{extent(rng), 3};
        const std::int32_t z = mapping == Mapping::symmetric
                                   ? symmetric_zero_point(dtype)
                                   : std::uniform_int_distribution<std::int32_t>(
                                         traits(dtype).qmin, traits(dtype).qmax)(rng);
        const QuantizationParams params =
            mapping == Mapping::symmetric ? QuantizationParams::per_tensor_symmetric(dtype, scale)
                                          : QuantizationParams::per_tensor_affine(dtype, scale, z);
        const QuantizeDesc d{shape, params};
        SCOPED_TRACE(describe({OpKind::quantize, d}));
        const auto n = static_cast<std::size_t>(element_count(shape));
        const std::vector<float> x = random_inputs(rng, n, scale);

        std::vector<std::uint8_t> want(n), got(n, 0xCD), via_plan(n, 0xCD);
        reference::quantize(d, x.data(), want.data());
        ops_->quantize(d, x.data(), got.data());
        EXPECT_EQ(got, want);
        const auto plan = ops_->plan({OpKind::quantize, d}, {});
        EXPECT_EQ(plan->kernel(), "c_scalar");
        EXPECT_EQ(plan->concurrency(), PlanConcurrency::concurrent);
        plan->run({x.data()}, {via_plan.data()});
        EXPECT_EQ(via_plan, want);

        std::vector<float> back_want(n), back_got(n, std::nanf(""));
        reference::dequantize(d, want.data(), back_want.data());
        ops_->dequantize(d, want.data(), back_got.data());
        EXPECT_EQ(std::memcmp(back_got.data(), back_want.data(), n * sizeof(float)), 0);
      }
}

TEST_F(CQuantize, KernelChoiceReachesThePlugin) {
  const QuantizeDesc d{{5}, QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3)};
  const std::vector<float> x{0.0f, 1.0f, -1.0f, 2.25f, 100.0f};
  std::vector<std::uint8_t> q(5);
  const auto plan = ops_->plan({OpKind::quantize, d}, PlanRequest{0, "c_scalar", {}});
  EXPECT_EQ(plan->kernel(), "c_scalar");
  plan->run({x.data()}, {q.data()});
  // 2.25 / 0.5 = 4.5 rounds to the even 4.
  EXPECT_EQ(q, (std::vector<std::uint8_t>{3, 5, 1, 7, 203}));
  try {
    ops_->plan({OpKind::quantize, d}, PlanRequest{0, "no_such_kernel", {}});
    ADD_FAILURE() << "a plan of an unknown kernel was made";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge
