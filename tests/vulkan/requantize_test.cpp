// requantize against qforge::reference in both modes, with multipliers from subnormal to 2^30
// (the fixed-point conversion and the 64-bit rounding-doubling product run in 32-bit halves on
// the GPU), per tensor and per channel.
#include <cmath>

#include "qforge/reference.h"
#include "test_data.h"
#include "vk_test_support.h"

namespace qforge::vktest {
namespace {

using RequantizeTest = VulkanTest;

std::vector<float> multipliers(Rng& rng, std::size_t count) {
  std::vector<float> m(count);
  std::uniform_int_distribution<int> kind(0, 9);
  for (auto& v : m) {
    switch (kind(rng)) {
      case 0: v = 0.0f; break;
      case 1: v = std::numeric_limits<float>::denorm_min() * 77.0f; break;
      case 2: v = random_scale(rng, -40, -30); break;  // shifts below -31 flush to 0
      case 3: v = random_scale(rng, 10, 29); break;    // large left shifts saturate
      default: v = random_scale(rng, -20, 2); break;
    }
  }
  return m;
}

std::vector<std::int32_t> accumulators(Rng& rng, std::size_t n) {
  std::vector<std::int32_t> c(n);
  std::uniform_int_distribution<std::int32_t> full(INT32_MIN, INT32_MAX);
  std::uniform_int_distribution<std::int32_t> small(-70000, 70000);
  std::uniform_int_distribution<int> kind(0, 9);
  for (auto& v : c) {
    const int k = kind(rng);
    v = k == 0 ? INT32_MIN : k == 1 ? INT32_MAX : k < 5 ? full(rng) : small(rng);
  }
  return c;
}

void run(QuantizationOps& ops, Rng& rng, RequantizeDesc desc) {
  SCOPED_TRACE(describe({OpKind::requantize, desc}) + " mode " + std::string(to_string(desc.mode)));
  const auto n = static_cast<std::size_t>(element_count(desc.shape));
  const auto c = accumulators(rng, n);
  std::vector<std::uint8_t> expected(n);
  reference::requantize(desc, c.data(), expected.data());
  DeviceArray dc(ops, c, 8), dy(ops, n, 3);
  ops.requantize(desc, static_cast<const std::int32_t*>(dc.ptr()), dy.ptr());
  const auto got = dy.read<std::uint8_t>();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t ch =
        desc.multipliers.size() == 1
            ? 0
            : (i / static_cast<std::size_t>(desc.shape.back())) % desc.multipliers.size();
    ASSERT_EQ(got[i], expected[i]) << "y[" << i << "] for c = " << c[i] << ", multiplier "
                                   << desc.multipliers[desc.multipliers.size() == 1 ? 0 : ch];
  }
}

TEST_F(RequantizeTest, BothModesMatchTheReference) {
  std::uniform_int_distribution<std::int32_t> zp(-128, 127);
  for (RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point})
    for (DType out : {DType::int8, DType::uint8}) {
      const std::int32_t z = zp(rng()) + (out == DType::uint8 ? 128 : 0);
      for (int rep = 0; rep < 8; ++rep) {
        RequantizeDesc per_tensor{{37, 29}, multipliers(rng(), 1), -1, out, z, mode};
        run(ops(), rng(), per_tensor);
        RequantizeDesc per_channel{{37, 29}, multipliers(rng(), 37), 0, out, z, mode};
        run(ops(), rng(), per_channel);
        if (HasFatalFailure()) return;
      }
    }
}

TEST_F(RequantizeTest, FixedPointRefusesMultipliersOf2To31) {
  RequantizeDesc d{{4}, {std::ldexp(1.0f, 31)}, -1, DType::int8, 0, RequantMode::fixed_point};
  const Support s = ops().supports({OpKind::requantize, d});
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("shift"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace qforge::vktest
