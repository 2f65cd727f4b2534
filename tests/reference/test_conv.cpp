// The convolution reference (conv_integer, qlinear_conv, conv_dequant): ONNX's ConvInteger
// examples and hand-computed cases bit for bit, auto_pad against ONNX's rule, and randomised
// properties (NHWC is NCHW transposed; a grouped convolution is its groups side by side).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

ConvDesc one_channel(std::int64_t h, std::int64_t w, std::int64_t k, DType wt, std::int32_t zx) {
  ConvDesc d;
  d.n = 1;
  d.c = 1;
  d.h = h;
  d.w = w;
  d.out_channels = 1;
  d.kernel_h = d.kernel_w = k;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, zx);
  d.w_params = wt == DType::uint8 ? QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0)
                                  : QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  return d;
}

// ONNX's ConvInteger node tests (onnx/backend/test/case/node/convinteger.py).
TEST(ReferenceConv, OnnxConvIntegerExamples) {
  const std::vector<std::uint8_t> x = {2, 3, 4, 5, 6, 7, 8, 9, 10};
  const std::vector<std::uint8_t> w = {1, 1, 1, 1};
  ConvDesc d = one_channel(3, 3, 2, DType::uint8, 1);
  std::vector<std::int32_t> y(4);
  reference::conv_integer(d, x.data(), w.data(), y.data());
  EXPECT_EQ(y, (std::vector<std::int32_t>{12, 16, 24, 28}));

  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
  y.assign(16, 0);
  reference::conv_integer(d, x.data(), w.data(), y.data());
  EXPECT_EQ(y, (std::vector<std::int32_t>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
}

// Centered X = [[0 1 2] [3 4 5] [6 7 8]], W = [[1 2] [3 4]] - zw with zw = 1 per channel.
TEST(ReferenceConv, HandComputedStrideDilationAndAsymmetricPads) {
  const std::vector<std::uint8_t> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<std::int8_t> w = {2, 3, 4, 5};
  ConvDesc d = one_channel(3, 3, 2, DType::int8, 1);
  d.w_params = QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, {1.0f}, {1});
  std::vector<std::int32_t> y(4);
  reference::conv_integer(d, x.data(), w.data(), y.data());
  EXPECT_EQ(y, (std::vector<std::int32_t>{27, 37, 57, 67}));

  // Dilation 2: the kernel taps the corners only: 0*1 + 2*2 + 6*3 + 8*4.
  d.dilation_h = d.dilation_w = 2;
  y.assign(1, 0);
  reference::conv_integer(d, x.data(), w.data(), y.data());
  EXPECT_EQ(y[0], 54);

  // Stride 2 with a pad only at the bottom and right: outputs at (0, 0), (0, 2), (2, 0), (2, 2).
  d.dilation_h = d.dilation_w = 1;
  d.stride_h = d.stride_w = 2;
  d.pad_bottom = d.pad_right = 1;
  ASSERT_EQ(d.out_h(), 2);
  y.assign(4, 0);
  reference::conv_integer(d, x.data(), w.data(), y.data());
  EXPECT_EQ(y, (std::vector<std::int32_t>{27, 2 * 1 + 5 * 3, 6 * 1 + 7 * 2, 8}));
}

TEST(ReferenceConv, QLinearConvRequantizesAddsBiasAndClamps) {
  // acc = 27, 37, 57, 67 as above; bias 3 at sx * sw; multiplier (1 * 0.5) / 4 = 1/8.
  const std::vector<std::uint8_t> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<std::int8_t> w = {2, 3, 4, 5};
  ConvDesc d = one_channel(3, 3, 2, DType::int8, 1);
  d.w_params = QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, {0.5f}, {1});
  d.bias = ConvBias::int32;
  d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 4.0f, 10);
  const std::int32_t bias = 3;
  std::vector<std::uint8_t> y(4);
  reference::qlinear_conv(d, x.data(), w.data(), &bias, y.data());
  // 30/8 = 3.75 -> 4, 40/8 = 5, 60/8 = 7.5 -> 8 (ties to even), 70/8 = 8.75 -> 9; plus zy = 10.
  EXPECT_EQ(y, (std::vector<std::uint8_t>{14, 15, 18, 19}));

  // ReLU6 in real units: 6 / sy = 1.5 -> 2 (even), so the codes clamp to [10, 12].
  d.activation = ConvActivation::relu6;
  reference::qlinear_conv(d, x.data(), w.data(), &bias, y.data());
  EXPECT_EQ(y, (std::vector<std::uint8_t>{12, 12, 12, 12}));
  d.activation = ConvActivation::clamp;
  d.clamp_min = 18.0f;  // 4.5 -> 4 (even) + 10 = 14
  d.clamp_max = 30.0f;  // 7.5 -> 8 + 10 = 18
  reference::qlinear_conv(d, x.data(), w.data(), &bias, y.data());
  EXPECT_EQ(y, (std::vector<std::uint8_t>{14, 15, 18, 18}));
}

TEST(ReferenceConv, ConvDequantAppliesScalesBiasAndRelu) {
  const std::vector<std::uint8_t> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<std::int8_t> w = {-1, -2, -3, -4};  // acc = -27, -37, -57, -67 (zw = 0)
  ConvDesc d = one_channel(3, 3, 2, DType::int8, 1);
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 1);
  d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f);
  d.bias = ConvBias::f32;
  const float fbias = 5.0f;
  std::vector<float> y(4);
  reference::conv_dequant(d, x.data(), w.data(), &fbias, y.data());
  EXPECT_EQ(y, (std::vector<float>{1.625f, 0.375f, -2.125f, -3.375f}));
  d.activation = ConvActivation::relu;
  reference::conv_dequant(d, x.data(), w.data(), &fbias, y.data());
  EXPECT_EQ(y, (std::vector<float>{1.625f, 0.375f, 0.0f, 0.0f}));
  // An int32 bias joins the accumulator: (acc + 8) * 0.5 * 0.25.
  d.activation = ConvActivation::none;
  d.bias = ConvBias::int32;
  const std::int32_t ibias = 8;
  reference::conv_dequant(d, x.data(), w.data(), &ibias, y.data());
  EXPECT_EQ(y, (std::vector<float>{-2.375f, -3.625f, -6.125f, -7.375f}));
}

TEST(ReferenceConv, AutoPadFollowsOnnx) {
  ConvDesc d;
  d.h = 5;
  d.w = 5;
  d.kernel_h = 4;
  d.kernel_w = 3;
  d.stride_w = 2;
  apply_auto_pad(d, AutoPad::same_upper);  // H: total 3, odd one at the end; W: out 3, total 2
  EXPECT_EQ(std::vector<std::int64_t>({d.pad_top, d.pad_bottom, d.pad_left, d.pad_right}),
            std::vector<std::int64_t>({1, 2, 1, 1}));
  EXPECT_EQ(d.out_h(), 5);
  EXPECT_EQ(d.out_w(), 3);
  apply_auto_pad(d, AutoPad::same_lower);
  EXPECT_EQ(std::vector<std::int64_t>({d.pad_top, d.pad_bottom}),
            std::vector<std::int64_t>({2, 1}));
  d.h = 7;
  d.kernel_h = 3;
  d.dilation_h = 2;  // a 5-tall dilated kernel: total 4
  apply_auto_pad(d, AutoPad::same_upper);
  EXPECT_EQ(std::vector<std::int64_t>({d.pad_top, d.pad_bottom}),
            std::vector<std::int64_t>({2, 2}));
  EXPECT_EQ(d.out_h(), 7);
  apply_auto_pad(d, AutoPad::valid);
  EXPECT_EQ(d.pad_top + d.pad_bottom + d.pad_left + d.pad_right, 0);
  d.stride_h = 0;
  EXPECT_THROW(apply_auto_pad(d, AutoPad::same_upper), Error);
}

// Random codes for a tensor of `count` elements.
template <class T>
std::vector<T> random_codes(std::mt19937_64& rng, std::size_t count) {
  std::vector<T> v(count);
  for (auto& e : v) e = static_cast<T>(test::uniform_int(rng, -128, 127) & 0xFF);
  return v;
}

TEST(ReferenceConv, NhwcIsNchwTransposed) {
  QFORGE_SEEDED_RNG(rng);
  ConvDesc d;
  d.n = 2;
  d.c = 6;
  d.h = 7;
  d.w = 5;
  d.out_channels = 4;
  d.kernel_h = 3;
  d.kernel_w = 2;
  d.stride_h = 2;
  d.dilation_w = 2;
  d.pad_top = 1;
  d.pad_right = 2;
  d.groups = 2;
  d.x_params = QuantizationParams::per_tensor_affine(
      DType::uint8, 0.1f, static_cast<std::int32_t>(test::uniform_int(rng, 0, 255)));
  d.w_params = QuantizationParams::per_channel(DType::int8, Mapping::affine, 0,
                                               std::vector<float>(4, 0.5f), {-3, 0, 7, 127});
  const auto x = random_codes<std::uint8_t>(rng, 2 * 6 * 7 * 5);
  const auto w =
      random_codes<std::int8_t>(rng, static_cast<std::size_t>(element_count(d.w_shape())));
  const std::int64_t oh = d.out_h(), ow = d.out_w();
  std::vector<std::int32_t> nchw(static_cast<std::size_t>(2 * 4 * oh * ow));
  reference::conv_integer(d, x.data(), w.data(), nchw.data());

  ConvDesc t = d;
  t.layout = ConvLayout::nhwc;
  std::vector<std::uint8_t> xt(x.size());
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t c = 0; c < 6; ++c)
      for (std::int64_t h = 0; h < 7; ++h)
        for (std::int64_t w_ = 0; w_ < 5; ++w_)
          xt[static_cast<std::size_t>(((n * 7 + h) * 5 + w_) * 6 + c)] =
              x[static_cast<std::size_t>(((n * 6 + c) * 7 + h) * 5 + w_)];
  std::vector<std::int32_t> nhwc(nchw.size());
  reference::conv_integer(t, xt.data(), w.data(), nhwc.data());
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t o = 0; o < 4; ++o)
      for (std::int64_t h = 0; h < oh; ++h)
        for (std::int64_t w_ = 0; w_ < ow; ++w_)
          ASSERT_EQ(nhwc[static_cast<std::size_t>(((n * oh + h) * ow + w_) * 4 + o)],
                    nchw[static_cast<std::size_t>(((n * 4 + o) * oh + h) * ow + w_)])
              << "at n=" << n << " o=" << o << " h=" << h << " w=" << w_;
}

// Depthwise with channel multiplier 2: output channel o reads input channel o / 2 only.
TEST(ReferenceConv, DepthwiseIsOneConvolutionPerChannel) {
  QFORGE_SEEDED_RNG(rng);
  ConvDesc d;
  d.n = 1;
  d.c = 3;
  d.h = 6;
  d.w = 7;
  d.out_channels = 6;
  d.groups = 3;
  d.kernel_h = d.kernel_w = 3;
  apply_auto_pad(d, AutoPad::same_lower);
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.1f, 128);
  d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f);
  const auto x = random_codes<std::uint8_t>(rng, 3 * 6 * 7);
  const auto w = random_codes<std::int8_t>(rng, 6 * 9);
  std::vector<std::int32_t> y(6 * 6 * 7);
  reference::conv_integer(d, x.data(), w.data(), y.data());
  ConvDesc one = d;
  one.c = 1;
  one.out_channels = 1;
  one.groups = 1;
  for (std::int64_t o = 0; o < 6; ++o) {
    std::vector<std::int32_t> yo(6 * 7);
    reference::conv_integer(one, x.data() + (o / 2) * 42, w.data() + o * 9, yo.data());
    for (std::size_t i = 0; i < yo.size(); ++i)
      ASSERT_EQ(y[static_cast<std::size_t>(o * 42) + i], yo[i]) << "channel " << o << " at " << i;
  }
}

TEST(ReferenceConv, AccumulatorOutsideInt32IsAnOverflow) {
  ConvDesc d;
  d.n = 1;
  d.c = 33026;  // one more than int32_safe_reduction: 2147483647 / (255 * 255) = 33025
  d.h = d.w = 1;
  d.out_channels = 1;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 255);
  d.w_params = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 127);
  EXPECT_EQ(reference::int32_safe_reduction(d), 33025);
  const std::vector<std::uint8_t> x(33026, 0);    // -255 each
  const std::vector<std::int8_t> w(33026, -128);  // -255 each
  std::int32_t y = 0;
  try {
    reference::conv_integer(d, x.data(), w.data(), &y);
    FAIL() << "no overflow reported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::overflow);
    EXPECT_NE(std::string(e.what()).find("(n, o, oh, ow) = (0, 0, 0, 0)"), std::string::npos)
        << e.what();
  }
  d.c = 33025;
  EXPECT_NO_THROW(reference::conv_integer(d, x.data(), w.data(), &y));
  EXPECT_EQ(y, 33025 * 65025);
}

}  // namespace
}  // namespace qforge
