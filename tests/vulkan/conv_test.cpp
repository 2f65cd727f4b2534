// The vulkan convolution beyond the conformance grid: plans with the weights (and bias) fixed,
// operands at unaligned offsets inside their buffers, an int32 bias that pushes a sum out of
// int32 (reported, never wrapped), and the refusals supports() gives.
#include <cstring>
#include <limits>

#include "qforge/error.h"
#include "qforge/plan.h"
#include "qforge/reference.h"
#include "test_data.h"
#include "vk_test_support.h"

namespace qforge::vktest {
namespace {

using ConvTest = VulkanTest;

int draw(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

std::vector<std::uint8_t> codes(Rng& rng, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(draw(rng, 0, 255));
  return v;
}

std::size_t count(const Shape& s) {
  std::size_t n = 1;
  for (const auto e : s) n *= static_cast<std::size_t>(e);
  return n;
}

// A random grouped convolution with per-channel weights and a random epilogue.
ConvDesc random_desc(Rng& rng, OpKind op) {
  ConvDesc d;
  d.layout = draw(rng, 0, 1) ? ConvLayout::nhwc : ConvLayout::nchw;
  d.groups = draw(rng, 1, 3);
  d.n = draw(rng, 1, 2);
  d.c = d.groups * draw(rng, 1, 4);
  d.out_channels = d.groups * draw(rng, 1, 3);
  d.h = draw(rng, 5, 9);  // the dilated kernel spans at most 5
  d.w = draw(rng, 5, 9);
  d.kernel_h = draw(rng, 1, 3);
  d.kernel_w = draw(rng, 1, 3);
  d.stride_h = draw(rng, 1, 2);
  d.dilation_w = draw(rng, 1, 2);
  d.pad_top = draw(rng, 0, 2);
  d.pad_right = draw(rng, 0, 1);
  const DType xt = draw(rng, 0, 1) ? DType::int8 : DType::uint8;
  d.x_params = QuantizationParams::per_tensor_affine(
      xt, random_scale(rng, -8, -2), xt == DType::int8 ? draw(rng, -20, 20) : draw(rng, 100, 150));
  std::vector<float> sw(static_cast<std::size_t>(d.out_channels));
  std::vector<std::int32_t> zw(sw.size());
  const DType wt = draw(rng, 0, 1) ? DType::int8 : DType::uint8;
  for (std::size_t i = 0; i < sw.size(); ++i)
    sw[i] = random_scale(rng, -8, -2),
    zw[i] = wt == DType::int8 ? draw(rng, -10, 10) : draw(rng, 118, 138);
  d.w_params = QuantizationParams::per_channel(wt, Mapping::affine, 0, sw, zw);
  if (op == OpKind::qlinear_conv) {
    d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, random_scale(rng, -6, -2),
                                                       draw(rng, 0, 255));
    d.requant_mode = draw(rng, 0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
    d.bias = draw(rng, 0, 1) ? ConvBias::int32 : ConvBias::none;
    d.activation = draw(rng, 0, 1) ? ConvActivation::relu : ConvActivation::none;
  } else if (op == OpKind::conv_dequant) {
    d.bias = draw(rng, 0, 1) ? ConvBias::f32 : ConvBias::int32;
    d.activation = draw(rng, 0, 1) ? ConvActivation::relu6 : ConvActivation::none;
  }
  return d;
}

std::vector<std::uint8_t> random_bias(Rng& rng, const ConvDesc& d) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(d.out_channels) * 4);
  for (std::size_t i = 0; i < out.size() / 4; ++i) {
    if (d.bias == ConvBias::f32) {
      const float v = static_cast<float>(draw(rng, -1000, 1000)) / 256.0f;
      std::memcpy(&out[i * 4], &v, 4);
    } else {
      const std::int32_t v = draw(rng, -5000, 5000);
      std::memcpy(&out[i * 4], &v, 4);
    }
  }
  return out;
}

TEST_F(ConvTest, PlansWithFixedWeightsMatchTheReference) {
  for (const OpKind op : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant})
    for (int repeat = 0; repeat < 4; ++repeat) {
      const ConvDesc d = random_desc(rng(), op);
      const OpDesc od{op, d};
      SCOPED_TRACE(describe(od));
      ASSERT_TRUE(ops().supports(od).supported) << ops().supports(od).reason;
      const auto w = codes(rng(), count(d.w_shape()));
      const auto bias =
          d.bias == ConvBias::none ? std::vector<std::uint8_t>{} : random_bias(rng(), d);
      PlanRequest request;
      request.weights = {nullptr, w.data()};
      if (d.bias != ConvBias::none) request.weights.push_back(bias.data());
      const auto plan = ops().plan(od, request);
      const std::size_t y_bytes = count(d.y_shape()) * (op == OpKind::qlinear_conv ? 1 : 4);
      for (int run = 0; run < 2; ++run) {  // fresh activations against the same weights
        const auto x = codes(rng(), count(d.x_shape()));
        std::vector<std::uint8_t> want(y_bytes);
        reference::conv(op, d, x.data(), w.data(), bias.empty() ? nullptr : bias.data(),
                        want.data());
        DeviceArray dx(ops(), x, 3), dy(ops(), y_bytes, op == OpKind::qlinear_conv ? 1 : 4);
        if (d.bias != ConvBias::none) plan->run({dx.ptr(), nullptr, nullptr}, {dy.ptr()});
        else plan->run({dx.ptr(), nullptr}, {dy.ptr()});
        // conv_dequant too: the epilogue runs in the reference's order, so it is exact here.
        ASSERT_EQ(dy.read<std::uint8_t>(), want) << "run " << run;
      }
    }
}

// Strides and dilations beyond int32 (allowed up to 2^48 where they do not matter: one output
// row, a one-tap kernel) and an empty reduction (C = 0: the bias alone).
TEST_F(ConvTest, ExtremeStridesAndEmptyReductionsMatchTheReference) {
  ConvDesc d;
  d.layout = ConvLayout::nhwc;
  d.n = 2, d.c = 3, d.h = 5, d.w = 4, d.out_channels = 2;
  d.kernel_w = 2;
  d.stride_h = d.stride_w = std::int64_t{1} << 40;
  d.dilation_h = std::int64_t{1} << 40;
  d.pad_bottom = 1;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 7);
  d.w_params = QuantizationParams::per_tensor_affine(DType::int8, 0.25f, -3);
  d.bias = ConvBias::f32;
  d.activation = ConvActivation::relu;
  for (const std::int64_t c : {std::int64_t{3}, std::int64_t{0}}) {
    d.c = c;
    SCOPED_TRACE(describe({OpKind::conv_dequant, d}));
    ASSERT_TRUE(ops().supports({OpKind::conv_dequant, d}).supported)
        << ops().supports({OpKind::conv_dequant, d}).reason;
    const auto x = codes(rng(), count(d.x_shape())), w = codes(rng(), count(d.w_shape()));
    const std::vector<float> bias = {1.5f, -2.0f};
    std::vector<float> want(count(d.y_shape()));
    reference::conv_dequant(d, x.data(), w.data(), bias.data(), want.data());
    DeviceArray dx(ops(), std::max<std::size_t>(x.size(), 1)),
        dw(ops(), std::max<std::size_t>(w.size(), 1));
    if (!x.empty()) dx.write(x.data(), x.size());
    if (!w.empty()) dw.write(w.data(), w.size());
    DeviceArray db(ops(), bias), dy(ops(), want.size() * 4);
    ops().conv(OpKind::conv_dequant, d, dx.ptr(), dw.ptr(), db.ptr(), dy.ptr());
    EXPECT_EQ(dy.read<float>(), want);
  }
}

TEST_F(ConvTest, BiasThatLeavesInt32IsReportedNeverWrapped) {
  ConvDesc d;
  d.n = 1, d.c = 1, d.h = 2, d.w = 2, d.out_channels = 1;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
  d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
  d.bias = ConvBias::int32;
  const std::vector<std::uint8_t> x = {1, 0, 0, 2};
  const std::vector<std::int8_t> w = {1};
  const std::vector<std::int32_t> bias = {std::numeric_limits<std::int32_t>::max() - 1};
  DeviceArray dx(ops(), x), dw(ops(), w), db(ops(), bias), dy(ops(), 16);
  for (const OpKind op : {OpKind::qlinear_conv, OpKind::conv_dequant}) {
    try {
      ops().conv(op, d, dx.ptr(), dw.ptr(), db.ptr(), dy.ptr());
      ADD_FAILURE() << to_string(op) << ": no error; expected overflow at (0, 0, 1, 1)";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::overflow) << e.what();
      // x = 2 at the last position: the first position (x = 1) gives exactly INT32_MAX.
      EXPECT_NE(std::string(e.what()).find("(0, 0, 1, 1)"), std::string::npos) << e.what();
    }
  }
}

TEST_F(ConvTest, RefusalsSayWhy) {
  ConvDesc d;
  d.n = 1, d.h = 1, d.w = 1, d.out_channels = 1;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.01f, 255);
  d.w_params = QuantizationParams::per_tensor_affine(DType::int8, 0.01f, 127);
  d.c = reference::int32_safe_reduction(d) + 1;
  Support s = ops().supports({OpKind::conv_integer, d});
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("int32_safe_reduction"), std::string::npos) << s.reason;
  d.c -= 1;
  EXPECT_TRUE(ops().supports({OpKind::conv_integer, d}).supported);

  // An output larger than one binding of a (pretended) small device. The limit applies to the
  // device's context, which the first allocation creates.
  DeviceArray first(ops(), 4);
  ASSERT_TRUE(ops().set_option("max_storage_buffer_range", "4096"));
  ConvDesc big;
  big.n = 1, big.c = 1, big.h = 64, big.w = 64, big.out_channels = 1;
  s = ops().supports({OpKind::conv_integer, big});
  ops().set_option("max_storage_buffer_range", "0");
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("storage-buffer binding"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace qforge::vktest
