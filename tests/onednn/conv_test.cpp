// The onednn plugin's convolutions (conv_integer, qlinear_conv, conv_dequant through
// dnnl::convolution_forward) against qforge::reference byte for byte: both layouts, u8/s8
// activations with zero points, int8/uint8 weights per tensor and per channel with zero points,
// kernels, strides, dilations, asymmetric pads, groups and depthwise, every bias and fused
// activation, both requantization modes; reductions long enough that the plugin must split them
// (oneDNN converts its int32 sums to float32); the int32 bias overflow; plans with fixed and
// per-run weights; and the refusal where oneDNN's int8 convolution is not exact (no VNNI/AMX;
// CMake runs Isa.* again under DNNL_MAX_CPU_ISA=AVX2).
#include <gtest/gtest.h>

#include <cstring>

#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::onednn_test {
namespace {

std::int64_t draw(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

bool conv_exact_here(const QuantizationOps& ops) {
  return device_property(ops, "int8_conv").rfind("exact", 0) == 0;
}

#define CONV_OR_SKIP(ops)                                       \
  if (!conv_exact_here(ops))                                    \
    GTEST_SKIP() << "int8 convolution is refused on this CPU: " \
                 << device_property(ops, "int8_conv");

// Operands as op_operands() lists them, random; bias values within +-bias_range.
struct ConvRun {
  OpKind op;
  ConvDesc d;
  std::vector<std::vector<std::uint8_t>> in;
  std::size_t y_bytes = 0, y_element = 1;
};

ConvRun random_operands(Rng& rng, OpKind op, const ConvDesc& d, std::int32_t bias_range = 5000) {
  ConvRun r{op, d, {}, 0, 1};
  const OpOperands l = op_operands({op, d});
  for (const auto& s : l.inputs) {
    std::vector<std::uint8_t> b(s.bytes);
    if (s.name == "bias" && d.bias == ConvBias::int32) {
      for (std::size_t i = 0; i + 4 <= b.size(); i += 4) {
        const auto v = static_cast<std::int32_t>(draw(rng, -bias_range, bias_range));
        std::memcpy(b.data() + i, &v, 4);
      }
    } else if (s.name == "bias") {
      for (std::size_t i = 0; i + 4 <= b.size(); i += 4) {
        const float v = std::uniform_real_distribution<float>(-50.0f, 50.0f)(rng);
        std::memcpy(b.data() + i, &v, 4);
      }
    } else {
      for (auto& v : b) v = static_cast<std::uint8_t>(draw(rng, 0, 255));
    }
    r.in.push_back(std::move(b));
  }
  r.y_bytes = l.outputs[0].bytes;
  r.y_element = op == OpKind::qlinear_conv ? 1 : 4;
  return r;
}

const void* bias_of(const ConvRun& r) { return r.in.size() > 2 ? r.in[2].data() : nullptr; }

std::vector<std::uint8_t> reference_y(const ConvRun& r) {
  std::vector<std::uint8_t> y(r.y_bytes);
  reference::conv(r.op, r.d, r.in[0].data(), r.in[1].data(), bias_of(r), y.data());
  return y;
}

// The plugin refuses these (oneDNN's gemm-based grouped convolution is not exact).
bool grouped_not_depthwise(const ConvDesc& d) {
  return d.groups > 1 && !(d.c == d.groups && d.out_channels == d.groups);
}

// Runs r through the per-call op and compares with the reference; returns the kernel it runs
// (the backend's own choice, as a plan made without a kernel names it).
std::string expect_exact(QuantizationOps& ops, const ConvRun& r) {
  SCOPED_TRACE(describe({r.op, r.d}));
  const Support s = ops.supports({r.op, r.d});
  EXPECT_TRUE(s.supported) << s.reason;
  if (!s.supported) return {};
  std::vector<std::uint8_t> y(r.y_bytes, 0xA5);
  ops.conv(r.op, r.d, r.in[0].data(), r.in[1].data(), bias_of(r), y.data());
  EXPECT_TRUE(same_bytes(y.data(), reference_y(r).data(), y.size(), r.y_element));
  return ops.plan({r.op, r.d}, PlanRequest{})->kernel();
}

ConvDesc random_conv(Rng& rng, OpKind op) {
  ConvDesc d;
  d.layout = draw(rng, 0, 1) ? ConvLayout::nhwc : ConvLayout::nchw;
  const std::int64_t kind = draw(rng, 0, 3);  // 0, 1: plain; 2: grouped; 3: depthwise
  d.groups = kind == 2 ? draw(rng, 2, 4) : 1;
  d.c = d.groups * draw(rng, 1, 24);
  d.out_channels = d.groups * draw(rng, 1, 24);
  if (kind == 3) {
    d.c = draw(rng, 1, 40);
    d.groups = d.c;
    d.out_channels = d.c * draw(rng, 1, 2);
  }
  d.n = draw(rng, 1, 3);
  d.kernel_h = draw(rng, 1, 5);
  d.kernel_w = draw(rng, 0, 2) ? d.kernel_h : draw(rng, 1, 7);
  d.stride_h = draw(rng, 1, 2);
  d.stride_w = draw(rng, 1, 3);
  d.dilation_h = draw(rng, 1, 2);
  d.dilation_w = draw(rng, 1, 2);
  d.pad_top = draw(rng, 0, 2);
  d.pad_left = draw(rng, 0, 3);
  d.pad_bottom = draw(rng, 0, 2);
  d.pad_right = draw(rng, 0, 1);
  const std::int64_t need_h = d.dilation_h * (d.kernel_h - 1) + 1 - d.pad_top - d.pad_bottom;
  const std::int64_t need_w = d.dilation_w * (d.kernel_w - 1) + 1 - d.pad_left - d.pad_right;
  d.h = std::max<std::int64_t>(need_h, 1) + draw(rng, 0, 12);
  d.w = std::max<std::int64_t>(need_w, 1) + draw(rng, 0, 12);
  const DType xt = draw(rng, 0, 1) ? DType::uint8 : DType::int8;
  d.x_params = random_params(rng, xt, draw(rng, 0, 3) == 0);
  const DType wt = draw(rng, 0, 2) ? DType::int8 : DType::uint8;
  const bool per_channel = draw(rng, 0, 1);
  d.w_params = random_params(rng, wt, wt == DType::int8 && draw(rng, 0, 1),
                             per_channel ? d.out_channels : 0, 0);
  if (op != OpKind::conv_integer) {
    const std::int64_t b = draw(rng, 0, 2);
    d.bias = b == 0                                 ? ConvBias::none
             : b == 1 || op == OpKind::qlinear_conv ? ConvBias::int32
                                                    : ConvBias::f32;
    d.activation = static_cast<ConvActivation>(draw(rng, 0, 3));
    d.clamp_min = -3.0f;
    d.clamp_max = 5.0f;
  }
  if (op == OpKind::qlinear_conv) {
    d.y_params = random_params(rng, draw(rng, 0, 1) ? DType::uint8 : DType::int8, false);
    d.requant_mode = draw(rng, 0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
  }
  return d;
}

TEST(Conv, MatchesReferenceOnRandomGeometries) {
  ONEDNN_OR_SKIP(ops);
  CONV_OR_SKIP(ops);
  Rng rng = test_rng();
  int ran = 0;
  for (int i = 0; i < 40; ++i)
    for (const OpKind op : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
      const ConvDesc d = random_conv(rng, op);
      // Descriptors the reference rejects (e.g. a multiplier that is not finite) are skipped.
      try {
        reference::check_descriptor(op, d);
      } catch (const Error&) {
        continue;
      }
      if (grouped_not_depthwise(d)) {
        const Support s = ops.supports({op, d});
        EXPECT_FALSE(s.supported) << describe({op, d});
        EXPECT_NE(s.reason.find("gemm-based"), std::string::npos) << s.reason;
        continue;
      }
      const std::string kernel = expect_exact(ops, random_operands(rng, op, d));
      EXPECT_EQ(kernel.rfind("dnnl_conv_", 0), 0u) << kernel;
      ++ran;
      if (::testing::Test::HasFailure()) return;
    }
  EXPECT_GT(ran, 60);
}

// ResNet-sized reductions with full-range weights: oneDNN converts every int32 sum to float32,
// so the plugin must split these (conv_weights.h); also the extremes (x all at the far end from
// zx, w all -128) and uint8 weights with per-channel zero points (the plugin's compensation).
TEST(Conv, LongReductionsAreExact) {
  ONEDNN_OR_SKIP(ops);
  CONV_OR_SKIP(ops);
  Rng rng = test_rng();
  for (const ConvLayout layout : {ConvLayout::nhwc, ConvLayout::nchw})
    for (const std::int64_t k : {1, 3}) {
      ConvDesc d;
      d.layout = layout;
      d.n = 2;
      d.c = 512;
      d.h = d.w = 9;
      d.out_channels = 40;
      d.kernel_h = d.kernel_w = k;
      apply_auto_pad(d, AutoPad::same_upper);
      d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.02f, 0);
      d.w_params = random_params(rng, DType::int8, true, d.out_channels, 0);
      ConvRun r = random_operands(rng, OpKind::conv_integer, d);
      expect_exact(ops, r);
      // Extremes: every sum is -255 * 128 * reduction (down to -150 million).
      std::memset(r.in[0].data(), 255, r.in[0].size());
      std::memset(r.in[1].data(), 0x80, r.in[1].size());
      expect_exact(ops, r);
      // uint8 weights, per-channel zero points: compensated by the plugin.
      d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.02f, 131);
      d.w_params = random_params(rng, DType::uint8, false, d.out_channels, 0);
      d.bias = ConvBias::int32;
      d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 40.0f, 7);
      expect_exact(ops, random_operands(rng, OpKind::qlinear_conv, d));
      d.y_params.reset();
      expect_exact(ops, random_operands(rng, OpKind::conv_dequant, d));
    }
}

// acc + an int32 bias outside int32 is reported as the reference reports it.
TEST(Conv, Int32BiasOverflowIsReported) {
  ONEDNN_OR_SKIP(ops);
  CONV_OR_SKIP(ops);
  ConvDesc d;
  d.layout = ConvLayout::nhwc;
  d.n = 1;
  d.c = 64;
  d.h = d.w = 4;
  d.out_channels = 16;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.1f, 0);
  d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f);
  d.bias = ConvBias::int32;
  const OpKind op = OpKind::conv_dequant;
  Rng rng = test_rng();
  ConvRun r = random_operands(rng, op, d);
  std::memset(r.in[0].data(), 255, r.in[0].size());
  std::memset(r.in[1].data(), 127, r.in[1].size());
  const std::int32_t big = 2147483647 - 100;
  for (std::size_t i = 0; i < 16; ++i) std::memcpy(r.in[2].data() + 4 * i, &big, 4);
  std::vector<std::uint8_t> y(r.y_bytes), want(r.y_bytes);
  std::string expected;
  try {
    reference::conv(op, d, r.in[0].data(), r.in[1].data(), r.in[2].data(), want.data());
  } catch (const Error& e) {
    expected = e.what();
  }
  ASSERT_FALSE(expected.empty());
  try {
    ops.conv(op, d, r.in[0].data(), r.in[1].data(), r.in[2].data(), y.data());
    ADD_FAILURE() << "no overflow reported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::overflow);
    EXPECT_EQ(std::string(e.what()), expected);
  }
}

// Plans: W and bias fixed (prepared once) or passed per run give the reference's bytes on fresh
// inputs, and runs reuse the primitive.
TEST(Conv, PlansMatchTheReference) {
  ONEDNN_OR_SKIP(ops);
  CONV_OR_SKIP(ops);
  Rng rng = test_rng();
  for (const OpKind op : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant})
    for (const bool fix : {true, false}) {
      ConvDesc d = random_conv(rng, op);
      d.c = d.groups * 100;  // long enough to be split with random weights when 3x3
      d.out_channels = d.groups * 8;
      d.kernel_h = d.kernel_w = 3;
      d.dilation_h = d.dilation_w = 1;
      d.h = std::max<std::int64_t>(d.h, 5);
      d.w = std::max<std::int64_t>(d.w, 5);
      d.w_params = random_params(rng, DType::int8, true, d.out_channels, 0);
      d.groups = 1;  // grouped convolutions are refused (grouped_not_depthwise)
      SCOPED_TRACE(describe({op, d}));
      ConvRun r = random_operands(rng, op, d);
      PlanRequest request;
      for (std::size_t i = 0; i < r.in.size(); ++i)
        request.weights.push_back(fix && i > 0 ? r.in[i].data() : nullptr);
      const auto plan = ops.plan({op, d}, request);
      EXPECT_EQ(plan->kernel().rfind("dnnl_conv_", 0), 0u) << plan->kernel();
      for (int run = 0; run < 2; ++run) {
        r.in[0] = random_operands(rng, op, d).in[0];  // fresh activations
        std::vector<const void*> in;
        for (std::size_t i = 0; i < r.in.size(); ++i)
          in.push_back(fix && i > 0 ? nullptr : r.in[i].data());
        std::vector<std::uint8_t> y(r.y_bytes, 0x5A);
        std::vector<void*> out{y.data()};
        plan->run(in, out);
        ASSERT_TRUE(same_bytes(y.data(), reference_y(r).data(), y.size(), r.y_element));
      }
    }
}

TEST(Conv, PrimitivesAreReused) {
  ONEDNN_OR_SKIP(ops);
  CONV_OR_SKIP(ops);
  Rng rng = test_rng();
  ConvDesc d;
  d.layout = ConvLayout::nhwc;
  d.n = 1;
  d.c = 32;
  d.h = d.w = 8;
  d.out_channels = 16;
  d.kernel_h = d.kernel_w = 3;
  apply_auto_pad(d, AutoPad::same_upper);
  d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f);
  expect_exact(ops, random_operands(rng, OpKind::conv_integer, d));
  const auto before = counters(device_property(ops, "conv_primitives"));
  for (int i = 0; i < 3; ++i) {
    d.x_params = random_params(rng, DType::uint8, false);  // new zero points: same primitive
    if (d.x_params.zero_point() == 0) continue;
    expect_exact(ops, random_operands(rng, OpKind::conv_integer, d));
  }
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3);
  expect_exact(ops, random_operands(rng, OpKind::conv_integer, d));
  const auto after = counters(device_property(ops, "conv_primitives"));
  EXPECT_LE(after.at("entries"), before.at("entries") + 1);  // the src zero point one at most
  EXPECT_GT(after.at("hits"), before.at("hits"));
}

// Without VNNI or AMX the three kinds are refused with the reason, per call and for plans.
TEST(Isa, ConvolutionOnlyWhereOneDnnIsExact) {
  ONEDNN_OR_SKIP(ops);
  const std::string isa = device_property(ops, "isa_used");
  SCOPED_TRACE("oneDNN ISA " + isa);
  ConvDesc d;
  d.n = 1;
  d.c = 8;
  d.h = d.w = 6;
  d.out_channels = 4;
  d.kernel_h = d.kernel_w = 3;
  const bool exact = isa == "avx512_core_vnni" || isa == "avx512_core_bf16" ||
                     isa == "avx512_core_amx" || isa == "avx2_vnni";
  EXPECT_EQ(conv_exact_here(ops), exact);
  Rng rng = test_rng();
  for (const OpKind op : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
    ConvDesc c = d;
    if (op == OpKind::qlinear_conv)
      c.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
    const Support s = ops.supports({op, c});
    if (exact) {
      EXPECT_TRUE(s.supported) << s.reason;
      expect_exact(ops, random_operands(rng, op, c));
      continue;
    }
    EXPECT_FALSE(s.supported);
    EXPECT_NE(s.reason.find("convolution"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find("vpmaddubsw"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find(isa), std::string::npos) << s.reason;
    const ConvRun r = random_operands(rng, op, c);
    std::vector<std::uint8_t> y(r.y_bytes);
    try {
      ops.conv(op, c, r.in[0].data(), r.in[1].data(), bias_of(r), y.data());
      ADD_FAILURE() << "conv ran where it is refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported);
      EXPECT_EQ(std::string(e.what()), s.reason);
    }
    try {
      (void)ops.plan({op, c}, PlanRequest{});
      ADD_FAILURE() << "a plan was made where conv is refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported);
    }
  }
}

}  // namespace
}  // namespace qforge::onednn_test
