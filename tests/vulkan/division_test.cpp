// The quantize division is exact on every driver (docs/VULKAN.md): quotients at and around
// half-integers, scales over the whole float32 range (subnormal, and >= 2^126 where Vulkan's
// 2.5-ULP promise for division ends), each element with its own scale.
#include <bit>
#include <cmath>

#include "qforge/reference.h"
#include "test_data.h"
#include "vk_test_support.h"

namespace qforge::vktest {
namespace {

using DivisionTest = VulkanTest;

void check(QuantizationOps& ops, DType dtype, const std::vector<float>& scales,
           const std::vector<float>& x, std::vector<std::int32_t> zps) {
  const Shape shape{static_cast<std::int64_t>(x.size())};
  const QuantizationParams p(dtype, Scheme::per_channel_affine(0), scales, std::move(zps));
  const QuantizeDesc desc{shape, p};
  std::vector<std::uint8_t> expected(x.size());
  reference::quantize(desc, x.data(), expected.data());
  DeviceArray dx(ops, x), dq(ops, x.size(), 1);
  ops.quantize(desc, dx.ptr(), dq.ptr());
  const auto got = dq.read<std::uint8_t>();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (got[i] != expected[i] && wrong++ < 5)
      ADD_FAILURE() << name(dtype) << " q[" << i << "] = " << int(got[i]) << ", reference "
                    << int(expected[i]) << " for x = " << x[i] << " (0x" << std::hex
                    << std::bit_cast<std::uint32_t>(x[i]) << "), s = " << scales[i] << " (0x"
                    << std::bit_cast<std::uint32_t>(scales[i]) << std::dec
                    << "), z = " << p.zero_point(i);
  EXPECT_EQ(wrong, 0u) << "of " << x.size();
}

TEST_F(DivisionTest, HalfIntegerQuotientsAcrossTheScaleRange) {
  const std::size_t n = 20000;
  std::vector<float> scales(n), x(n);
  std::vector<std::int32_t> zps(n);
  std::uniform_int_distribution<int> pick(0, 9);
  std::uniform_int_distribution<std::int32_t> z(-128, 127);
  for (std::size_t i = 0; i < n; ++i) {
    switch (pick(rng())) {
      case 0: scales[i] = random_scale(rng(), -149, -127); break;  // subnormal scales
      case 1: scales[i] = random_scale(rng(), 120, 127); break;    // huge scales
      case 2: scales[i] = random_scale(rng(), -126, -100); break;  // tiny normal scales
      default: scales[i] = random_scale(rng(), -30, 30); break;
    }
    if (scales[i] == 0.0f) scales[i] = std::numeric_limits<float>::denorm_min();
    x[i] = tricky_value(rng(), scales[i], 300.0f);
    zps[i] = z(rng());
  }
  check(ops(), DType::int8, scales, x, zps);
  for (auto& v : zps) v += 128;
  check(ops(), DType::uint8, scales, x, zps);
}

// Every float32 x whose quotient by s is within a few ULPs of n + 0.5, for a few scales with
// long significands (the quotients are inexact, so the driver's rounding matters most).
TEST_F(DivisionTest, NeighboursOfEveryTieInTheRange) {
  std::vector<float> scales, x;
  for (float s : {0.1f, 0.0137f, 3.3f, 1.0f / 3.0f, 7.7e-5f, 1.2e5f}) {
    for (int q = -260; q <= 260; ++q) {
      const float tie = (static_cast<float>(q) + 0.5f) * s;
      float lo = tie, hi = tie;
      for (int k = 0; k < 3; ++k) {
        lo = std::nextafter(lo, -INFINITY);
        hi = std::nextafter(hi, INFINITY);
      }
      for (float v = lo; v <= hi; v = std::nextafter(v, INFINITY)) {
        scales.push_back(s);
        x.push_back(v);
      }
    }
  }
  check(ops(), DType::int8, scales, x, std::vector<std::int32_t>(x.size(), 0));
  check(ops(), DType::uint8, scales, x, std::vector<std::int32_t>(x.size(), 128));
}

}  // namespace
}  // namespace qforge::vktest
