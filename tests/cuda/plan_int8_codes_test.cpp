// uint8 activations run as int8 codes (qforge.torch on CUDA tensors): a uint8 affine per-tensor
// (s, z) and the int8 affine (s, z - 128) give codes that differ by exactly 128 (quantize is
// saturate(round(x / s) + z)), and a matmul_dequant plan over either form gives the same float
// output bit for bit: every (a - za) is the same integer, so the sums, the scales and the bias
// meet in the same epilogue. The int8 form lets the GEMM read A as it is instead of converting
// uint8 A on every run.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "qforge/plan.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

class Int8Codes : public CudaTest {
 protected:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  float normal() { return std::normal_distribution<float>(0.0f, 1.5f)(rng_); }

  std::vector<float> random_x(std::int64_t count) {
    std::vector<float> x(static_cast<std::size_t>(count));
    for (auto& v : x) v = normal();
    // The edges: values far out of range saturate, NaN maps to the zero point, ties.
    if (!x.empty()) x[0] = std::numeric_limits<float>::quiet_NaN();
    if (x.size() > 1) x[1] = 1e9f;
    if (x.size() > 2) x[2] = -1e9f;
    return x;
  }
};

TEST_F(Int8Codes, QuantizeAndMatmulDequantPlansGiveTheSameOutputsAsUint8) {
  for (int round = 0; round < 12; ++round) {
    const std::int64_t m = round % 3 == 0 ? uniform(1, 8) : uniform(1, 300);
    const std::int64_t n = uniform(1, 200);
    const std::int64_t k = round % 2 == 0 ? 16 * uniform(1, 40) : uniform(1, 400);
    SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k));
    const float sa = std::exp2(static_cast<float>(uniform(-9, -3)) + 0.37f);
    const int za = uniform(0, 255);
    const auto u8 = QuantizationParams::per_tensor_affine(DType::uint8, sa, za);
    const auto s8 = QuantizationParams::per_tensor_affine(DType::int8, sa, za - 128);

    const std::vector<float> x = random_x(m * k);
    DeviceArray dx(ops(), x.size() * sizeof(float));
    dx.write(x);
    const auto mk = static_cast<std::size_t>(m * k);
    DeviceArray qu(ops(), mk), qs(ops(), mk);
    run_plan(ops(), {OpKind::quantize, QuantizeDesc{{m, k}, u8}}, "", {dx.data()}, {qu.data()});
    run_plan(ops(), {OpKind::quantize, QuantizeDesc{{m, k}, s8}}, "", {dx.data()}, {qs.data()});
    const auto codes_u8 = qu.read_as<std::uint8_t>();
    const auto codes_s8 = qs.read_as<std::int8_t>();
    for (std::size_t i = 0; i < mk; ++i)
      ASSERT_EQ(static_cast<int>(codes_s8[i]), static_cast<int>(codes_u8[i]) - 128)
          << "element " << i << " of x = " << x[i];

    // Weights as qforge.torch makes them: int8 symmetric per output channel, [N, K], a bias.
    std::vector<float> sb(static_cast<std::size_t>(n));
    for (auto& s : sb) s = std::exp2(static_cast<float>(uniform(-10, -5)) + 0.11f);
    const auto bp = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sb,
                                                    std::vector<std::int32_t>(sb.size(), 0));
    std::vector<std::int8_t> b(static_cast<std::size_t>(n * k));
    for (auto& v : b) v = static_cast<std::int8_t>(uniform(-127, 127));
    std::vector<float> bias(static_cast<std::size_t>(n));
    for (auto& v : bias) v = normal();
    const auto matmul = [&](const QuantizationParams& ap) {
      MatmulDesc d{.m = m,
                   .n = n,
                   .k = k,
                   .a = ap,
                   .b = bp,
                   .b_layout = MatrixLayout::nk,
                   .has_bias = true,
                   .out_type = FloatType::f32,
                   .y = std::nullopt,
                   .requant_mode = RequantMode::float_multiplier};
      return OpDesc{OpKind::matmul_dequant, d};
    };
    const auto mn = static_cast<std::size_t>(m * n) * sizeof(float);
    DeviceArray yu(ops(), mn), ys(ops(), mn);
    const std::vector<const void*> weights{nullptr, b.data(), bias.data()};
    run_plan(ops(), matmul(u8), "", {qu.data(), nullptr, nullptr}, {yu.data()}, weights);
    run_plan(ops(), matmul(s8), "", {qs.data(), nullptr, nullptr}, {ys.data()}, weights);
    const auto got = ys.read(), want = yu.read();
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0)
        << "matmul_dequant over int8 codes differs from uint8";
    EXPECT_TRUE(ys.guards_intact());
    EXPECT_TRUE(qs.guards_intact());
  }
}

}  // namespace
}  // namespace qforge::cuda_test
