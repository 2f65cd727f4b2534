// Convolution (ONNX ConvInteger, QLinearConv, and conv with fused dequantization) over a grid of
// geometries: NCHW and NHWC; 1x1, 3x3, 5x5, 7x7 and non-square kernels; strides; dilations;
// asymmetric pads and auto_pad SAME_UPPER / SAME_LOWER / VALID; groups and depthwise with channel
// multiplier 1 and 2; odd extents. Every geometry runs u8xs8, u8xu8 and s8xs8 with weights per
// tensor and per output channel; the fused variants add int32 / float biases, both requantization
// modes and the fused ReLU / ReLU6 / clamp. Integer outputs exact, conv_dequant within
// tolerance::kConvDequant.
#include <gtest/gtest.h>

#include "harness/fixture.h"
#include "harness/random_data.h"
#include "harness/tolerances.h"
#include "qforge/reference.h"
#include "testers/conv_tester.h"

namespace qforge::conformance {
namespace {

std::vector<ConvGeometry> geometries() {
  std::vector<ConvGeometry> base = {
      {.label = "1x1", .n = 2, .c = 5, .h = 7, .w = 6, .o = 3},
      {.label = "3x3_pad1",
       .c = 4,
       .h = 9,
       .w = 11,
       .o = 6,
       .kh = 3,
       .kw = 3,
       .pad_top = 1,
       .pad_left = 1,
       .pad_bottom = 1,
       .pad_right = 1},
      {.label = "5x5_stride2_asym_pads",
       .c = 3,
       .h = 13,
       .w = 12,
       .o = 4,
       .kh = 5,
       .kw = 5,
       .stride_h = 2,
       .stride_w = 2,
       .pad_top = 2,
       .pad_left = 1,
       .pad_bottom = 1,
       .pad_right = 2},
      {.label = "7x7_stride2_pad3",
       .c = 3,
       .h = 15,
       .w = 14,
       .o = 5,
       .kh = 7,
       .kw = 7,
       .stride_h = 2,
       .stride_w = 2,
       .pad_top = 3,
       .pad_left = 3,
       .pad_bottom = 3,
       .pad_right = 3},
      {.label = "3x3_dilation2",
       .c = 4,
       .h = 11,
       .w = 9,
       .o = 4,
       .kh = 3,
       .kw = 3,
       .dilation_h = 2,
       .dilation_w = 2,
       .pad_top = 2,
       .pad_left = 2,
       .pad_bottom = 2,
       .pad_right = 2},
      {.label = "4x3_stride2_same_upper",
       .n = 2,
       .c = 3,
       .h = 10,
       .w = 9,
       .o = 2,
       .kh = 4,
       .kw = 3,
       .stride_h = 2,
       .stride_w = 2,
       .auto_pad = AutoPad::same_upper},
      {.label = "2x2_same_lower",
       .c = 2,
       .h = 7,
       .w = 7,
       .o = 3,
       .kh = 2,
       .kw = 2,
       .auto_pad = AutoPad::same_lower},
      {.label = "3x3_stride1x2_valid",
       .c = 3,
       .h = 8,
       .w = 9,
       .o = 2,
       .kh = 3,
       .kw = 3,
       .stride_w = 2,
       .auto_pad = AutoPad::valid},
      {.label = "3x3_groups2",
       .c = 6,
       .h = 7,
       .w = 8,
       .o = 4,
       .kh = 3,
       .kw = 3,
       .pad_top = 1,
       .pad_left = 1,
       .pad_bottom = 1,
       .pad_right = 1,
       .groups = 2},
      {.label = "dw3x3_stride2",
       .c = 8,
       .h = 9,
       .w = 10,
       .o = 8,
       .kh = 3,
       .kw = 3,
       .stride_h = 2,
       .stride_w = 2,
       .auto_pad = AutoPad::same_upper,
       .groups = 8},
      {.label = "dw3x3_multiplier2",
       .c = 5,
       .h = 7,
       .w = 6,
       .o = 10,
       .kh = 3,
       .kw = 3,
       .pad_top = 1,
       .pad_left = 1,
       .pad_bottom = 1,
       .pad_right = 1,
       .groups = 5},
      // Channels in sixteens (cpu_x86's four-tap depthwise kernel where the centered weights
      // fit int8): an odd width with pads, and a 5-wide window (two groups of 4 taps) with a
      // channel multiplier, stride 2 and a dilated height.
      {.label = "dw3x3_c32_odd_width",
       .n = 2,
       .c = 32,
       .h = 5,
       .w = 13,
       .o = 32,
       .kh = 3,
       .kw = 3,
       .pad_top = 1,
       .pad_left = 1,
       .pad_bottom = 1,
       .pad_right = 1,
       .groups = 32},
      {.label = "dw3x5_c8_multiplier2_stride2",
       .c = 8,
       .h = 9,
       .w = 11,
       .o = 16,
       .kh = 3,
       .kw = 5,
       .stride_h = 2,
       .stride_w = 2,
       .dilation_h = 2,
       .pad_top = 2,
       .pad_left = 2,
       .pad_bottom = 1,
       .pad_right = 2,
       .groups = 8},
      {.label = "1x3_row", .n = 3, .c = 1, .h = 1, .w = 17, .o = 2, .kh = 1, .kw = 3},
      {.label = "5x5_whole_input", .c = 2, .h = 5, .w = 5, .o = 3, .kh = 5, .kw = 5},
  };
  std::vector<ConvGeometry> out;
  for (const ConvLayout layout : {ConvLayout::nchw, ConvLayout::nhwc})
    for (ConvGeometry g : base) {
      g.layout = layout;
      out.push_back(std::move(g));
    }
  return out;
}

struct ConvParam {
  std::string plugin;
  ConvGeometry geometry;
  std::string name() const { return plugin + "_" + geometry.name(); }
  friend void PrintTo(const ConvParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<ConvParam> grid() {
  std::vector<ConvParam> out;
  for (const auto& plugin : plugins_under_test())
    for (const auto& g : geometries()) out.push_back({plugin, g});
  return out;
}

struct Pair {
  DType x, w;
};
const Pair kPairs[] = {
    {DType::uint8, DType::int8}, {DType::uint8, DType::uint8}, {DType::int8, DType::int8}};

class ConvInteger : public PluginTest<ConvParam> {};

TEST_P(ConvInteger, MatchesReference) {
  for (const Pair& p : kPairs)
    for (const bool per_channel : {false, true})
      ConvTester()
          .geometry(GetParam().geometry)
          .x_dtype(p.x)
          .w_dtype(p.w)
          .w_per_channel(per_channel)
          .test(OpKind::conv_integer, target_, rng_);
  expect_checked();
}

class QLinearConv : public PluginTest<ConvParam> {};

TEST_P(QLinearConv, MatchesReference) {
  const ConvActivation activations[] = {ConvActivation::none, ConvActivation::relu,
                                        ConvActivation::relu6, ConvActivation::clamp};
  int i = 0;
  for (const Pair& p : kPairs)
    for (const bool per_channel : {false, true})
      for (const auto mode : {RequantMode::float_multiplier, RequantMode::fixed_point}) {
        ConvTester()
            .geometry(GetParam().geometry)
            .x_dtype(p.x)
            .w_dtype(p.w)
            .w_per_channel(per_channel)
            .bias(i % 2 ? ConvBias::int32 : ConvBias::none)
            .y_dtype(i % 3 ? p.x : (p.x == DType::int8 ? DType::uint8 : DType::int8))
            .requant_mode(mode)
            .activation(activations[i % 4])
            .test(OpKind::qlinear_conv, target_, rng_);
        ++i;
      }
  expect_checked();
}

class ConvDequant : public PluginTest<ConvParam> {};

TEST_P(ConvDequant, MatchesReference) {
  const ConvActivation activations[] = {ConvActivation::none, ConvActivation::relu,
                                        ConvActivation::relu6, ConvActivation::clamp};
  int i = 0;
  for (const Pair& p : kPairs)
    for (const bool per_channel : {false, true})
      for (const auto bias : {ConvBias::none, ConvBias::f32, ConvBias::int32}) {
        ConvTester()
            .geometry(GetParam().geometry)
            .x_dtype(p.x)
            .w_dtype(p.w)
            .w_per_channel(per_channel)
            .bias(bias)
            .activation(activations[i % 4])
            .test(OpKind::conv_dequant, target_, rng_);
        ++i;
      }
  expect_checked();
}

// A reduction one longer than int32_safe_reduction with every product at its largest: the exact
// sum leaves int32, so the plugin must refuse the descriptor or throw ErrorCode::overflow.
struct BoundParam {
  std::string plugin;
  std::string name() const { return plugin; }
  friend void PrintTo(const BoundParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<BoundParam> bound_grid() {
  std::vector<BoundParam> out;
  for (const auto& plugin : plugins_under_test()) out.push_back({plugin});
  return out;
}

class ConvInt32Bound : public PluginTest<BoundParam> {};

TEST_P(ConvInt32Bound, OverflowIsReportedNeverWrapped) {
  for (const OpKind op : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
    ConvDesc d;
    d.layout = chance(rng_, 0.5) ? ConvLayout::nchw : ConvLayout::nhwc;
    d.n = 1;
    d.h = d.w = 1;
    d.out_channels = 1;
    d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.01f, 255);
    d.w_params = QuantizationParams::per_tensor_affine(DType::int8, 0.01f, 127);
    d.c = reference::int32_safe_reduction(d) + 1;  // 33026 products of (-255) * (-255)
    if (op == OpKind::qlinear_conv)
      d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
    const auto count = static_cast<std::size_t>(d.c);
    std::vector<std::byte> x(count, std::byte{0}), w(count, std::byte{0x80});
    const Shape ys = d.y_shape();
    ExpectedOutput y{op == OpKind::conv_integer ? OutputSpec::int32("y", ys)
                     : op == OpKind::qlinear_conv
                         ? OutputSpec::quantized("y", ys, DType::uint8)
                         : OutputSpec::floating("y", ys, FloatType::f32, tolerance::kConvDequant),
                     {}};
    y.bytes.resize(y.spec.bytes());
    OpCase oc{OpDesc{op, d}};
    oc.label = describe(oc.op) + ", extreme codes";
    run_reference(oc, [&] { reference::conv(op, d, x.data(), w.data(), nullptr, y.bytes.data()); });
    ASSERT_EQ(oc.reference, ReferenceOutcome::overflow) << oc.reference_error;
    oc.inputs = {{"x", std::move(x)}, {"w", std::move(w)}};
    oc.outputs = {std::move(y)};
    oc.launches = {{"direct", [op, d](QuantizationOps& ops, const std::vector<void*>& in,
                                      const std::vector<void*>& out) {
                      ops.conv(op, d, in[0], in[1], nullptr, out[0]);
                    }}};
    run_case(target_, oc);
  }
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, ConvInt32Bound, ::testing::ValuesIn(bound_grid()),
                         param_name<BoundParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ConvInt32Bound);

INSTANTIATE_TEST_SUITE_P(Conformance, ConvInteger, ::testing::ValuesIn(grid()),
                         param_name<ConvParam>);
INSTANTIATE_TEST_SUITE_P(Conformance, QLinearConv, ::testing::ValuesIn(grid()),
                         param_name<ConvParam>);
INSTANTIATE_TEST_SUITE_P(Conformance, ConvDequant, ::testing::ValuesIn(grid()),
                         param_name<ConvParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ConvInteger);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(QLinearConv);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ConvDequant);

}  // namespace
}  // namespace qforge::conformance
