// cpu_x86's convolution beyond the conformance grid: every kernel that runs convolutions (the
// GEMM kernels through im2col, the direct depthwise and short-reduction kernels) run through
// plans of each on random geometries (drawn until supports() lists the kernel) large enough to
// cross the tiles and the 64-pixel tasks, both layouts, groups, every dtype pair and weight
// granularity, batches small and split by image; plans with prepacked weights; an int32 bias that
// overflows; the int32 reduction bound. Every output equals the reference's bit for bit (the float
// epilogue follows the reference's order of operations).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cpu_x86_test {
namespace {

using Bytes = std::vector<std::uint8_t>;

std::int64_t pick(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

struct ConvCase {
  OpKind op;
  ConvDesc d;
  Bytes x, w, bias;
};

// The geometries a kernel serves: depthwise (groups == C, channel multiplier 1 to 3), one group
// with a reduction C * KH * KW of at most 64 (the short-reduction kernel), one group with rows
// wider than a 32-pixel block and more than one 64-channel block (the implicit GEMM), or any.
enum class Family { any, depthwise, small_k, implicit };

Family family_of(const std::string& kernel) {
  if (kernel.find("dwconv") != std::string::npos) return Family::depthwise;
  if (kernel.find("conv_k64") != std::string::npos) return Family::small_k;
  if (kernel.find("iconv") != std::string::npos) return Family::implicit;
  return Family::any;
}

// A random descriptor of the family that the reference accepts, with 1 to max_n images.
ConvDesc random_desc(Rng& rng, OpKind op, Family family, std::int64_t max_n) {
  for (;;) {
    ConvDesc d;
    d.layout = rng() % 2 ? ConvLayout::nchw : ConvLayout::nhwc;
    d.n = pick(rng, 1, max_n);
    d.h = pick(rng, 1, 20);
    d.w = pick(rng, 1, 20);
    d.kernel_h = pick(rng, 1, 5);
    d.kernel_w = pick(rng, 1, 5);
    d.stride_h = pick(rng, 1, 3);
    d.stride_w = pick(rng, 1, 3);
    d.dilation_h = pick(rng, 1, 2);
    d.dilation_w = pick(rng, 1, 2);
    d.pad_top = pick(rng, 0, 2);
    d.pad_left = pick(rng, 0, 2);
    d.pad_bottom = pick(rng, 0, 2);
    d.pad_right = pick(rng, 0, 2);
    if (family == Family::depthwise) {
      d.c = d.groups = pick(rng, 1, 80);
      d.out_channels = d.c * (rng() % 3 ? 1 : pick(rng, 2, 3));  // channel multiplier
    } else if (family == Family::small_k) {
      d.groups = 1;
      d.c = pick(rng, 1, std::max<std::int64_t>(1, 64 / (d.kernel_h * d.kernel_w)));
      d.out_channels = pick(rng, 1, 72);
    } else if (family == Family::implicit) {
      // Up to 3 channel blocks, 5 output channel panels and 45 pixels a row (two blocks); 3x3
      // windows at most when there are many channels, to keep the emulated kernel quick.
      d.groups = 1;
      d.c = rng() % 2 ? pick(rng, 1, 24) : pick(rng, 25, 150);
      if (d.c > 24) d.kernel_h = pick(rng, 1, 3), d.kernel_w = pick(rng, 1, 3);
      d.w = pick(rng, 1, 45);
      d.h = pick(rng, 1, 8);
      d.out_channels = pick(rng, 1, 80);
      if (rng() % 4 == 0) {  // 1x1, stride 1, no pads: the batch as one row of pixels
        d.kernel_h = d.kernel_w = d.stride_h = d.stride_w = 1;
        d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 0;
      }
    } else {
      d.groups = rng() % 3 ? 1 : pick(rng, 2, 4);
      d.c = d.groups * pick(rng, 1, 24);
      d.out_channels = d.groups * pick(rng, 1, 40);
    }
    const DType xt = rng() % 2 ? DType::uint8 : DType::int8;
    const DType wt = rng() % 3 ? DType::int8 : DType::uint8;
    d.x_params = random_params(rng, xt, Granularity::per_tensor, rng() % 4 == 0, 1);
    const bool per_channel = rng() % 2;
    d.w_params =
        random_params(rng, wt, per_channel ? Granularity::per_channel : Granularity::per_tensor,
                      rng() % 2 == 0, d.out_channels, 0);
    if (op == OpKind::qlinear_conv) {
      d.bias = rng() % 2 ? ConvBias::int32 : ConvBias::none;
      // An output scale that keeps most sums inside the output range.
      const float spread = d.x_params.scale() * d.w_params.scale() *
                           static_cast<float>(d.reduction() > 0 ? d.reduction() : 1) * 64.0f;
      const DType yt = rng() % 2 ? DType::uint8 : DType::int8;
      // One in three: multipliers above 1 (left shifts in fixed point, saturating outputs).
      float max_sw = 0;
      for (const float v : d.w_params.scales()) max_sw = std::max(max_sw, v);
      const float sy = rng() % 3 == 0 ? d.x_params.scale() * max_sw /
                                            static_cast<float>(std::int64_t{1} << pick(rng, 0, 20))
                                      : spread / 255.0f;
      d.y_params = QuantizationParams::per_tensor_affine(
          yt, sy,
          yt == DType::uint8 ? static_cast<std::int32_t>(pick(rng, 0, 255))
                             : static_cast<std::int32_t>(pick(rng, -128, 127)));
      d.requant_mode = rng() % 2 ? RequantMode::fixed_point : RequantMode::float_multiplier;
    }
    if (op == OpKind::conv_dequant) {
      const ConvBias biases[] = {ConvBias::none, ConvBias::f32, ConvBias::int32};
      d.bias = biases[rng() % 3];
    }
    if (op != OpKind::conv_integer) {
      const ConvActivation acts[] = {ConvActivation::none, ConvActivation::relu,
                                     ConvActivation::relu6, ConvActivation::clamp};
      d.activation = acts[rng() % 4];
      d.clamp_min = -1.5f;
      d.clamp_max = 2.5f;
    }
    try {
      reference::check_descriptor(op, d);
      return d;
    } catch (const Error&) {
      // e.g. a dilated kernel larger than the padded input: draw again
    }
  }
}

// Random X, W and bias codes for a descriptor.
ConvCase case_with_data(Rng& rng, OpKind op, const ConvDesc& desc) {
  ConvCase c{op, desc, {}, {}, {}};
  const ConvDesc& d = c.d;
  auto count = [](const Shape& s) {
    std::int64_t n = 1;
    for (auto e : s) n *= e;
    return n;
  };
  c.x = random_codes(rng, d.x_params.dtype(), count(d.x_shape()));
  c.w = random_codes(rng, d.w_params.dtype(), count(d.w_shape()));
  if (d.bias == ConvBias::int32) {
    std::vector<std::int32_t> b(static_cast<std::size_t>(d.out_channels));
    for (auto& v : b) v = static_cast<std::int32_t>(pick(rng, -100000, 100000));
    c.bias.resize(b.size() * 4);
    std::memcpy(c.bias.data(), b.data(), c.bias.size());
  }
  if (d.bias == ConvBias::f32) {
    std::vector<float> b(static_cast<std::size_t>(d.out_channels));
    std::uniform_real_distribution<float> u(-2, 2);
    for (auto& v : b) v = u(rng);
    c.bias.resize(b.size() * 4);
    std::memcpy(c.bias.data(), b.data(), c.bias.size());
  }
  return c;
}

ConvCase random_case(Rng& rng, OpKind op, Family family, std::int64_t max_n = 2) {
  return case_with_data(rng, op, random_desc(rng, op, family, max_n));
}

std::size_t y_bytes(const ConvCase& c) {
  std::int64_t n = 1;
  for (auto e : c.d.y_shape()) n *= e;
  return static_cast<std::size_t>(n) * (c.op == OpKind::qlinear_conv ? 1 : 4);
}

Bytes reference_output(const ConvCase& c) {
  Bytes y(y_bytes(c));
  reference::conv(c.op, c.d, c.x.data(), c.w.data(), c.bias.empty() ? nullptr : c.bias.data(),
                  y.data());
  return y;
}

class CpuX86Conv : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    loaded_ = load_plugin();
    if (!loaded_.ops) GTEST_SKIP() << loaded_.why_missing;
    if (!loaded_.ops->availability().usable) GTEST_SKIP() << loaded_.ops->availability().reason;
    std::string why;
    if (!kernel_runnable(*loaded_.ops, GetParam(), &why)) GTEST_SKIP() << why;
  }
  // A random case of `op` that supports() offers the kernel under test for.
  ConvCase case_for(Rng& rng, OpKind op, std::int64_t max_n = 2) const {
    for (int tries = 0; tries < 10000; ++tries) {
      ConvCase c = random_case(rng, op, family_of(GetParam()), max_n);
      const Support s = loaded_.ops->supports(OpDesc{op, c.d});
      if (std::find(s.kernels.begin(), s.kernels.end(), GetParam()) != s.kernels.end()) return c;
    }
    throw std::runtime_error("no random " + std::string(to_string(op)) + " that " + GetParam() +
                             " runs in 10000 draws");
  }
  // Runs c through a plan of the kernel under test into y; returns the kernel the plan ran.
  std::string run(const ConvCase& c, Bytes& y) const {
    const auto plan = loaded_.ops->plan(OpDesc{c.op, c.d}, PlanRequest{0, GetParam(), {}});
    std::vector<const void*> in{c.x.data(), c.w.data()};
    if (c.d.bias != ConvBias::none) in.push_back(c.bias.data());
    plan->run(in, std::vector<void*>{y.data()});
    return plan->kernel();
  }
  Loaded loaded_;
};

TEST_P(CpuX86Conv, MatchesReferenceOnRandomGeometries) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  for (int i = 0; i < 12; ++i)
    for (const OpKind op : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
      const ConvCase c = case_for(rng, op);
      const Bytes want = reference_output(c);
      Bytes got(want.size(), 0xCD);
      const std::string ran = run(c, got);
      ASSERT_TRUE(got == want) << "case " << i << ": " << describe(OpDesc{op, c.d}) << " (kernel "
                               << ran << ")";
      ASSERT_EQ(ran, GetParam());
    }
}

// Batches of at least two images per thread, which every thread takes whole (conv.h).
TEST_P(CpuX86Conv, MatchesReferenceOnBatchesSplitByImage) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  ops.set_option("threads", "2");
  for (int i = 0; i < 4; ++i)
    for (const OpKind op : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
      ConvCase c = case_for(rng, op, 9);
      const Bytes want = reference_output(c);
      Bytes got(want.size(), 0xCD);
      const std::string ran = run(c, got);
      ASSERT_TRUE(got == want) << "case " << i << ": " << describe(OpDesc{op, c.d}) << " (kernel "
                               << ran << ")";
    }
}

// 'Same' convolutions at stride 1 with whole 64-channel blocks, where the implicit kernel loads
// tiles of two output rows straight from X when none of their pixels is in the padding and
// copies the others row by row: widths below and above 16 (tiles of up to 6 output rows, and
// across images), pads of 1 (3x3) and 2 (3x3 dilated by 2), channels 64 to 200, int8 and uint8
// X, both requantization modes. Kernels that do not take a case are skipped for it.
TEST_P(CpuX86Conv, MatchesReferenceOnSameStrideOneLayers) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  int ran_cases = 0;
  for (int i = 0; i < 10; ++i)
    for (const OpKind op : {OpKind::conv_integer, OpKind::qlinear_conv}) {
      ConvDesc d;
      d.layout = ConvLayout::nhwc;
      d.n = pick(rng, 1, 3);
      const std::int64_t channels[] = {64, 128, 96, 200};
      d.c = channels[rng() % 4];
      d.h = pick(rng, 1, 5);
      const std::int64_t widths[] = {3, 7, 13, 17, 29};
      d.w = widths[rng() % 5];
      d.out_channels = pick(rng, 1, 40);
      d.kernel_h = d.kernel_w = 3;
      d.dilation_h = d.dilation_w = i % 3 == 2 ? 2 : 1;
      d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = d.dilation_h;
      d.groups = 1;
      const DType xt = i % 2 ? DType::uint8 : DType::int8;
      d.x_params = random_params(rng, xt, Granularity::per_tensor, false, 1);
      d.w_params =
          random_params(rng, DType::int8, Granularity::per_channel, true, d.out_channels, 0);
      if (op == OpKind::qlinear_conv) {
        d.bias = rng() % 2 ? ConvBias::int32 : ConvBias::none;
        const float sy = d.x_params.scale() * d.w_params.scale() *
                         static_cast<float>(d.reduction()) * 64.0f / 255.0f;
        d.y_params = QuantizationParams::per_tensor_affine(
            DType::uint8, sy, static_cast<std::int32_t>(pick(rng, 0, 255)));
        d.requant_mode = rng() % 2 ? RequantMode::fixed_point : RequantMode::float_multiplier;
      }
      const Support s = loaded_.ops->supports(OpDesc{op, d});
      if (std::find(s.kernels.begin(), s.kernels.end(), GetParam()) == s.kernels.end()) continue;
      const ConvCase c = case_with_data(rng, op, d);
      const Bytes want = reference_output(c);
      Bytes got(want.size(), 0xCD);
      const std::string ran = run(c, got);
      ASSERT_TRUE(got == want) << "case " << i << ": " << describe(OpDesc{op, c.d}) << " (kernel "
                               << ran << ")";
      ++ran_cases;
    }
  if (ran_cases == 0) GTEST_SKIP() << GetParam() << " took none of these layers";
}

INSTANTIATE_TEST_SUITE_P(Kernels, CpuX86Conv,
                         ::testing::Values("q8_dwconv_c32__avx512vnni", "q8_dwconv_c32__avx2",
                                           "q8_conv_k64__avx2_maddwd",
                                           "q8_gemm_2x16c4__avx2_maddwd",
                                           "q8_gemm_4x16c4__avx2_maddubs",
                                           "q8_gemm_6x16c4__avxvnni", "q8_gemm_6x64c4__avx512vnni",
                                           "q8_gemm_32x32c4__amx", "q8_gemv_2x16c4__avx2_maddwd",
                                           "q8_gemv_16x16c4__avx512vnni", "q8_gemv_16x32c4__amx",
                                           "q8_iconv_32x32c4__amx", "q8_iconv_32x32c4__scalar"),
                         [](const auto& info) { return info.param; });

// The AVX-512 depthwise kernel's four-tap path (conv_depthwise_dot4_avx512.cpp), which it takes
// when O is a multiple of 16 and every centered weight fits int8: odd widths, pads, strides,
// dilations, windows 1 to 9 wide (up to 3 groups of 4 taps), channel multipliers, int8 and uint8
// X, batches split by image or not, on 1, 2, 3 and 7 threads (tasks that start and end inside
// an image's block of 16 channels).
TEST(CpuX86DepthwiseFourTaps, MatchesReferenceWhereCentredWeightsFitInt8) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  const std::string kernel = "q8_dwconv_c32__avx512vnni";
  std::string why;
  if (!kernel_runnable(*l.ops, kernel, &why)) GTEST_SKIP() << why;
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *l.ops;
  for (int i = 0; i < 48; ++i) {
    ops.set_option("threads", std::array{"1", "2", "3", "7"}[static_cast<std::size_t>(i / 3 % 4)]);
    const OpKind op = i % 3 == 0   ? OpKind::conv_integer
                      : i % 3 == 1 ? OpKind::qlinear_conv
                                   : OpKind::conv_dequant;
    ConvDesc d = random_desc(rng, op, Family::depthwise, i % 4 == 0 ? 6 : 2);
    const std::int64_t multiplier = rng() % 3 ? 1 : pick(rng, 2, 4);
    d.c = d.groups = 16 / multiplier * pick(rng, 1, 4);
    if (16 % multiplier) d.c = d.groups = 16 * pick(rng, 1, 3);
    d.out_channels = d.c * multiplier;
    d.w = pick(rng, 1, 41);
    d.kernel_w = pick(rng, 1, 9);
    d.pad_left = pick(rng, 0, 4);
    d.pad_right = pick(rng, 0, 4);
    if (i % 4 == 1) {  // the common window: 3x3, stride 1 or 2, pads 0 or 1
      d.kernel_h = d.kernel_w = 3;
      d.dilation_h = d.dilation_w = 1;
      d.stride_h = d.stride_w = pick(rng, 1, 2);
      d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = pick(rng, 0, 1);
    }
    // Centered weights inside int8: int8 codes with zero point 0, or uint8 codes around 128.
    const bool w_signed = rng() % 2;
    std::vector<float> scales(static_cast<std::size_t>(d.out_channels));
    for (auto& v : scales) v = 0.001f * static_cast<float>(pick(rng, 1, 100));
    std::vector<std::int32_t> zps(scales.size(), w_signed ? 0 : 128);
    d.w_params = QuantizationParams(
        w_signed ? DType::int8 : DType::uint8,
        Scheme{w_signed ? Mapping::symmetric : Mapping::affine, Granularity::per_channel, 0},
        scales, w_signed ? std::vector<std::int32_t>{} : zps);
    try {
      reference::check_descriptor(op, d);
    } catch (const Error&) {
      continue;  // a window larger than the padded input
    }
    const ConvCase c = case_with_data(rng, op, d);
    const Bytes want = reference_output(c);
    Bytes got(want.size(), 0xCD);
    const auto plan = ops.plan(OpDesc{op, c.d}, PlanRequest{0, kernel, {}});
    std::vector<const void*> in{c.x.data(), c.w.data()};
    if (c.d.bias != ConvBias::none) in.push_back(c.bias.data());
    plan->run(in, std::vector<void*>{got.data()});
    ASSERT_TRUE(got == want) << "case " << i << ": " << describe(OpDesc{op, c.d});
  }
}

// The four-tap kernel's fixed-point requantization in registers takes a shorter form for a block
// of 16 channels whose multipliers all lie below 0.5 (no left shift, a right shift of 1 or more)
// and the general one for the other blocks: layers of 3 to 5 blocks where blocks drawn at random
// mix one or more channels of multipliers 0.5 to 8 (a zero or a left shift, saturating outputs)
// among small ones, int8 and uint8 outputs, every activation, widths whose columns go by four
// and one at a time.
TEST(CpuX86DepthwiseFourTaps, FixedPointBlocksOfBothFormsMatchReference) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  const std::string kernel = "q8_dwconv_c32__avx512vnni";
  std::string why;
  if (!kernel_runnable(*l.ops, kernel, &why)) GTEST_SKIP() << why;
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *l.ops;
  int mixed_blocks = 0, right_blocks = 0;
  for (int i = 0; i < 16; ++i) {
    ops.set_option("threads", i % 2 ? "2" : "1");
    ConvDesc d = random_desc(rng, OpKind::qlinear_conv, Family::depthwise, 2);
    d.c = d.out_channels = d.groups = 16 * pick(rng, 3, 5);
    d.h = pick(rng, 3, 9);
    d.w = pick(rng, 3, 23);
    d.kernel_h = d.kernel_w = 3;
    d.stride_h = d.stride_w = pick(rng, 1, 2);
    d.dilation_h = d.dilation_w = 1;
    d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = pick(rng, 0, 1);
    d.bias = ConvBias::none;  // an int32 bias left over would move the requantization out
    d.requant_mode = RequantMode::fixed_point;
    // Multipliers sx * sw / sy: below 0.5 in every block, then 1 to 4 channels of 0.5 to 8 in
    // the blocks drawn for it.
    const float sx = d.x_params.scale(), sy = 0.05f;
    std::vector<float> target(static_cast<std::size_t>(d.c));
    for (auto& v : target) v = 0.0005f * static_cast<float>(pick(rng, 1, 900));
    for (std::int64_t b = 0; b < d.c / 16; ++b) {
      if (rng() % 2) {
        ++right_blocks;
        continue;
      }
      ++mixed_blocks;
      for (std::int64_t k = pick(rng, 1, 4); k > 0; --k)
        target[static_cast<std::size_t>(16 * b + pick(rng, 0, 15))] =
            0.5f + 0.01f * static_cast<float>(pick(rng, 0, 750));
    }
    std::vector<float> scales(target.size());
    for (std::size_t c = 0; c < target.size(); ++c) scales[c] = target[c] * sy / sx;
    d.w_params = QuantizationParams(
        DType::int8, Scheme{Mapping::symmetric, Granularity::per_channel, 0}, scales, {});
    const bool y_signed = rng() % 2;
    d.y_params = QuantizationParams::per_tensor_affine(
        y_signed ? DType::int8 : DType::uint8, sy,
        static_cast<std::int32_t>(y_signed ? pick(rng, -128, 127) : pick(rng, 0, 255)));
    reference::check_descriptor(OpKind::qlinear_conv, d);
    const ConvCase c = case_with_data(rng, OpKind::qlinear_conv, d);
    const Bytes want = reference_output(c);
    Bytes got(want.size(), 0xCD);
    const auto plan = ops.plan(OpDesc{OpKind::qlinear_conv, c.d}, PlanRequest{0, kernel, {}});
    ASSERT_EQ(plan->kernel(), kernel);
    plan->run(std::vector<const void*>{c.x.data(), c.w.data()}, std::vector<void*>{got.data()});
    ASSERT_TRUE(got == want) << "case " << i << ": " << describe(OpDesc{OpKind::qlinear_conv, c.d});
  }
  EXPECT_GT(mixed_blocks, 0);
  EXPECT_GT(right_blocks, 0);
}

// Plans made with W and the bias fixed (W packed once) and with every input per run, run from
// two threads at once, each output equal to the reference's.
TEST(CpuX86ConvPlans, PrepackedAndPerRunWeightsMatchReferenceFromSeveralThreads) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *l.ops;
  ops.set_option("threads", "2");
  struct Job {
    ConvCase c;
    Bytes want;
    std::shared_ptr<const Plan> plan;
  };
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) {
    const OpKind op = i % 3 == 0   ? OpKind::conv_integer
                      : i % 3 == 1 ? OpKind::qlinear_conv
                                   : OpKind::conv_dequant;
    const Family family = i % 4 == 3   ? Family::depthwise
                          : i % 4 == 1 ? Family::small_k
                                       : Family::any;
    Job j{random_case(rng, op, family, i % 2 ? 6 : 2), {}, nullptr};
    j.want = reference_output(j.c);
    PlanRequest request;
    if (i % 2 == 0) {
      request.weights = {nullptr, j.c.w.data()};
      if (j.c.d.bias != ConvBias::none) request.weights.push_back(j.c.bias.data());
    }
    j.plan = ops.plan(OpDesc{op, j.c.d}, request);
    jobs.push_back(std::move(j));
  }
  auto run_all = [&](std::vector<std::string>& errors) {
    for (int rep = 0; rep < 3; ++rep)
      for (const Job& j : jobs) {
        Bytes got(j.want.size(), 0xCD);
        std::vector<const void*> in = {j.c.x.data(),
                                       j.plan->reads_input(1) ? j.c.w.data() : nullptr};
        if (j.c.d.bias != ConvBias::none)
          in.push_back(j.plan->reads_input(2) ? j.c.bias.data() : nullptr);
        std::vector<void*> out = {got.data()};
        j.plan->run(in, out);
        if (got != j.want)
          errors.push_back(describe(j.plan->desc()) + " (kernel " + j.plan->kernel() + ")");
      }
  };
  std::vector<std::string> e1, e2;
  std::thread t([&] { run_all(e1); });
  run_all(e2);
  t.join();
  for (const auto* e : {&e1, &e2})
    for (const auto& what : *e) ADD_FAILURE() << "differs from the reference: " << what;
}

// acc + an int32 bias that leaves int32: the same overflow error as the reference, per call and
// through a plan.
TEST(CpuX86ConvOverflow, Int32BiasSumIsReportedAsTheReferenceDoes) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  QuantizationOps& ops = *l.ops;
  // One group (4 channels in, 2 out) and depthwise over 16 channels (the AVX-512 kernel's
  // four-tap path, whose sums then go through the epilogue's bias add and overflow check).
  for (const bool depthwise : {false, true})
    for (const OpKind op : {OpKind::qlinear_conv, OpKind::conv_dequant}) {
      ConvDesc d;
      d.layout = ConvLayout::nhwc;
      d.n = 1, d.c = 4, d.h = 3, d.w = 3, d.out_channels = 2;
      if (depthwise) d.c = d.out_channels = d.groups = 16;
      d.kernel_h = d.kernel_w = 3;
      d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 0);
      d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f);
      d.bias = ConvBias::int32;
      if (op == OpKind::qlinear_conv)
        d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
      const Bytes x(static_cast<std::size_t>(9 * d.c), 255),
          w(static_cast<std::size_t>(9 * d.c / d.groups * d.out_channels), 127);
      // 9 * 255 * 127 more (one group: 36 * ...) leaves int32 in the last channel.
      std::vector<std::int32_t> bias(static_cast<std::size_t>(d.out_channels), 0);
      bias.back() = 2147483647 - 100;
      Bytes y(static_cast<std::size_t>(d.out_channels * (op == OpKind::qlinear_conv ? 1 : 4)));
      std::string want;
      try {
        reference::conv(op, d, x.data(), w.data(), bias.data(), y.data());
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), ErrorCode::overflow);
        want = e.what();
      }
      ASSERT_FALSE(want.empty());
      try {
        ops.conv(op, d, x.data(), w.data(), bias.data(), y.data());
        ADD_FAILURE() << "no overflow reported for " << to_string(op);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::overflow);
        EXPECT_EQ(std::string(e.what()), want);
      }
      const std::string kernel = depthwise && kernel_runnable(ops, "q8_dwconv_c32__avx512vnni")
                                     ? "q8_dwconv_c32__avx512vnni"
                                     : "";
      const auto plan =
          ops.plan(OpDesc{op, d}, PlanRequest{0, kernel, {nullptr, w.data(), bias.data()}});
      std::vector<const void*> in = {x.data(), nullptr, nullptr};
      std::vector<void*> out = {y.data()};
      try {
        plan->run(in, out);
        ADD_FAILURE() << "no overflow reported by the plan for " << to_string(op) << " (kernel "
                      << plan->kernel() << ")";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::overflow);
        EXPECT_EQ(std::string(e.what()), want);
      }
    }
}

// The kernels sum in int32: a reduction above reference::int32_safe_reduction is refused with
// the reason, one at the bound is served.
TEST(CpuX86ConvBound, ReductionAboveTheInt32BoundIsRefused) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  ConvDesc d;
  d.n = 1, d.h = 1, d.w = 1, d.out_channels = 1;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.01f, 255);
  d.w_params = QuantizationParams::per_tensor_affine(DType::int8, 0.01f, 127);
  d.c = reference::int32_safe_reduction(d);
  EXPECT_TRUE(l.ops->supports(OpDesc{OpKind::conv_integer, d}).supported);
  d.c += 1;
  const Support s = l.ops->supports(OpDesc{OpKind::conv_integer, d});
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("int32-safe length"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace qforge::cpu_x86_test
