// Descriptors the convolution reference refuses, each with its own message, and the same verdict
// from reference::check_descriptor (what every backend's supports() starts from).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge {
namespace {

ConvDesc good() {
  ConvDesc d;
  d.n = 1;
  d.c = 4;
  d.h = 5;
  d.w = 5;
  d.out_channels = 6;
  d.kernel_h = d.kernel_w = 3;
  d.groups = 2;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.1f, 128);
  d.w_params = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0,
                                               std::vector<float>(6, 0.05f));
  d.y_params = QuantizationParams::per_tensor_affine(DType::int8, 0.2f, -3);
  return d;
}

struct BadCase {
  std::string name;
  OpKind op;
  std::function<void(ConvDesc&)> change;
  std::string message;  // a part of the expected message
};

std::vector<BadCase> bad_cases() {
  using K = OpKind;
  return {
      {"groups_do_not_divide_c", K::conv_integer,
       [](ConvDesc& d) {
         d.groups = 3;
         d.out_channels = 6;
       },
       "c = 4 is not a multiple of groups = 3"},
      {"groups_do_not_divide_o", K::conv_integer, [](ConvDesc& d) { d.out_channels = 5; },
       "out_channels = 5 is not a multiple of groups = 2"},
      {"zero_groups", K::conv_integer, [](ConvDesc& d) { d.groups = 0; },
       "groups = 0; expected >= 1"},
      {"zero_stride", K::conv_integer, [](ConvDesc& d) { d.stride_w = 0; },
       "stride_w = 0; expected >= 1"},
      {"zero_dilation", K::conv_integer, [](ConvDesc& d) { d.dilation_h = 0; },
       "dilation_h = 0; expected >= 1"},
      {"negative_pad", K::conv_integer, [](ConvDesc& d) { d.pad_left = -1; },
       "pad_left = -1; expected >= 0"},
      {"negative_batch", K::conv_integer, [](ConvDesc& d) { d.n = -2; }, "n = -2; expected >= 0"},
      {"kernel_larger_than_input", K::conv_integer, [](ConvDesc& d) { d.dilation_h = 3; },
       "the dilated kernel along H spans 7 positions but the padded input has 5"},
      {"huge_extent", K::conv_integer, [](ConvDesc& d) { d.h = std::int64_t{1} << 50; },
       "h = 1125899906842624 exceeds the size limit"},
      {"x_per_channel", K::conv_integer,
       [](ConvDesc& d) {
         d.x_params = QuantizationParams::per_channel(DType::uint8, Mapping::affine, 1,
                                                      std::vector<float>(4, 0.1f),
                                                      std::vector<std::int32_t>(4, 0));
       },
       "expected per-tensor params (ONNX's x_zero_point and x_scale are scalars)"},
      {"x_int4", K::conv_integer,
       [](ConvDesc& d) {
         d.x_params = QuantizationParams::per_tensor_symmetric(DType::int4, 1.0f);
       },
       "expected int8 or uint8"},
      {"w_per_channel_wrong_axis", K::conv_integer,
       [](ConvDesc& d) {
         d.w_params = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 1,
                                                      std::vector<float>(2, 0.1f));
       },
       "expected per-tensor or per_channel along axis 0"},
      {"w_per_channel_wrong_count", K::conv_integer,
       [](ConvDesc& d) {
         d.w_params = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0,
                                                      std::vector<float>(4, 0.1f));
       },
       "reference::conv_integer: "},
      {"w_logarithmic", K::conv_dequant,
       [](ConvDesc& d) { d.w_params = QuantizationParams::logarithmic(DType::int8, 1.0f); },
       "with an affine or symmetric mapping"},
      {"bias_on_conv_integer", K::conv_integer, [](ConvDesc& d) { d.bias = ConvBias::int32; },
       "expected none (ONNX ConvInteger has none)"},
      {"float_bias_on_qlinear", K::qlinear_conv, [](ConvDesc& d) { d.bias = ConvBias::f32; },
       "expected none or int32 at scale sx * sw"},
      {"activation_on_conv_integer", K::conv_integer,
       [](ConvDesc& d) { d.activation = ConvActivation::relu; }, "expected none (ConvInteger's"},
      {"clamp_reversed", K::conv_dequant,
       [](ConvDesc& d) {
         d.activation = ConvActivation::clamp;
         d.clamp_min = 2;
         d.clamp_max = 1;
       },
       "clamp bounds [2, 1]; expected finite bounds with clamp_min <= clamp_max"},
      {"no_output_params", K::qlinear_conv, [](ConvDesc& d) { d.y_params.reset(); },
       "no output params (y_params is empty)"},
      {"int16_output", K::qlinear_conv,
       [](ConvDesc& d) {
         d.y_params = QuantizationParams::per_tensor_symmetric(DType::int16, 1.0f);
       },
       "expected int8 or uint8"},
      {"multiplier_overflows", K::qlinear_conv,
       [](ConvDesc& d) {
         d.y_params = QuantizationParams::per_tensor_affine(
             DType::int8, std::numeric_limits<float>::denorm_min(), 0);
       },
       "multiplier (sx * sw) / sy overflows float32"},
  };
}

TEST(ReferenceConvErrors, EachBadDescriptorHasItsMessage) {
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.name);
    ConvDesc d = good();
    ASSERT_NO_THROW(reference::check_descriptor({c.op, d}));
    try {
      c.change(d);
    } catch (const Error& e) {  // the params constructor itself refused
      ADD_FAILURE() << "params refused in the test itself: " << e.what();
      continue;
    }
    std::string op_message, check_message;
    try {
      reference::check_descriptor({c.op, d});
      ADD_FAILURE() << "check_descriptor accepted it";
    } catch (const Error& e) {
      check_message = e.what();
      // A params count that does not fit W is validate_for's shape_mismatch.
      if (c.name != "w_per_channel_wrong_count")
        EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << check_message;
    }
    EXPECT_NE(check_message.find(c.message), std::string::npos) << check_message;
    EXPECT_EQ(check_message.rfind("reference::" + std::string(to_string(c.op)) + ": ", 0), 0u)
        << check_message;
    // The op throws the same before it touches any array.
    std::vector<std::byte> scratch(64);
    try {
      reference::conv(c.op, d, scratch.data(), scratch.data(), scratch.data(), scratch.data());
      ADD_FAILURE() << "the op accepted it";
    } catch (const Error& e) {
      op_message = e.what();
    }
    EXPECT_EQ(op_message, check_message);
  }
}

TEST(ReferenceConvErrors, DescriptorTypeMustMatchTheOp) {
  try {
    reference::check_descriptor({OpKind::matmul_integer, good()});
    FAIL() << "a ConvDesc passed as matmul_integer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("descriptor is a ConvDesc"), std::string::npos);
  }
  MatmulDesc m{.m = 1,
               .n = 1,
               .k = 1,
               .a = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
               .b = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
               .y = std::nullopt};
  EXPECT_THROW(reference::check_descriptor({OpKind::qlinear_conv, m}), Error);
}

TEST(ReferenceConvErrors, NullArraysAreNamed) {
  const ConvDesc d = good();
  std::vector<std::uint8_t> x(100);
  std::vector<std::int8_t> w(100);
  std::vector<std::int32_t> y(200);
  try {
    reference::conv_integer(d, x.data(), nullptr, y.data());
    FAIL() << "a null w was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("w is null"), std::string::npos) << e.what();
  }
  ConvDesc b = d;
  b.bias = ConvBias::f32;
  EXPECT_THROW(
      reference::conv_dequant(b, x.data(), w.data(), nullptr, reinterpret_cast<float*>(y.data())),
      Error);
}

}  // namespace
}  // namespace qforge
