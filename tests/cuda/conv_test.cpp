// The three convolutions on every kernel the plugin lists (through plans of each), against
// qforge::reference bit for bit: int32 and requantized codes exactly, and the float output too,
// since the epilogue evaluates ((float(acc) * sx) * sw) + bias in the reference's order without
// FMA. Geometries are random (odd extents, strides, dilations, asymmetric pads, auto_pad,
// groups, depthwise with channel multipliers, C / G multiples of 32 for the vector gather),
// as are dtypes, per-channel weights, zero points, biases and activations.
#include "kernels/conv.h"

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "qforge/conv_bound.h"
#include "qforge/error.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

int uniform(std::mt19937_64& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

::testing::AssertionResult same_bytes(const std::vector<std::byte>& got,
                                      const std::vector<std::byte>& want, std::size_t element) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); i += element)
    if (std::memcmp(got.data() + i, want.data() + i, element) != 0 && bad++ == 0) first = i;
  if (bad == 0) return ::testing::AssertionSuccess();
  std::int64_t g = 0, w = 0;
  std::memcpy(&g, got.data() + first, element);
  std::memcpy(&w, want.data() + first, element);
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() / element << " elements differ; first at index "
         << first / element << ": got 0x" << std::hex << g << ", expected 0x" << w;
}

// The plugin's count of convolution runs that waited for the overflow flag (plugin.cpp).
std::uint64_t overflow_checks() {
  using Counter = std::uint64_t (*)();
  void* lib = dlopen(plugin_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!lib) throw std::runtime_error("the loaded plugin " + plugin_path() + " was not found");
  auto counter = reinterpret_cast<Counter>(dlsym(lib, "qforge_cuda_conv_overflow_checks"));
  if (!counter) throw std::runtime_error("the plugin exports no qforge_cuda_conv_overflow_checks");
  return counter();
}

class CudaConv : public CudaTest {
 protected:
  QuantizationParams activation_params(DType t) {
    const auto& tr = traits(t);
    const float s = std::exp2(static_cast<float>(uniform(rng_, -8, -2)));
    if (uniform(rng_, 0, 2) == 0) return QuantizationParams::per_tensor_symmetric(t, s);
    return QuantizationParams::per_tensor_affine(t, s, uniform(rng_, tr.qmin, tr.qmax));
  }
  QuantizationParams weight_params(DType t, std::int64_t o) {
    const auto& tr = traits(t);
    const bool per_channel = uniform(rng_, 0, 1);
    const bool zero_points = uniform(rng_, 0, 2) == 0;
    const std::size_t n = per_channel ? static_cast<std::size_t>(o) : 1;
    std::vector<float> scales(n);
    for (auto& s : scales) s = std::exp2(std::uniform_real_distribution<float>(-9.0f, -3.0f)(rng_));
    std::vector<std::int32_t> zps(n);
    for (auto& z : zps)
      z = zero_points ? uniform(rng_, tr.qmin, tr.qmax) : (t == DType::uint8 ? 128 : 0);
    if (per_channel) return QuantizationParams::per_channel(t, Mapping::affine, 0, scales, zps);
    return QuantizationParams::per_tensor_affine(t, scales[0], zps[0]);
  }

  // A random geometry the reference accepts; `depthwise` makes groups == C.
  ConvDesc random_geometry(bool depthwise) {
    ConvDesc d;
    d.layout = uniform(rng_, 0, 1) ? ConvLayout::nhwc : ConvLayout::nchw;
    d.n = uniform(rng_, 1, 3);
    if (depthwise) {
      d.c = uniform(rng_, 1, 40);
      d.groups = d.c;
      d.out_channels = d.c * uniform(rng_, 1, 3);
    } else {
      d.groups = uniform(rng_, 0, 2) == 0 ? uniform(rng_, 2, 4) : 1;
      const std::int64_t cg =
          uniform(rng_, 0, 2) == 0 ? 32 * uniform(rng_, 1, 3) : uniform(rng_, 1, 45);
      d.c = cg * d.groups;
      d.out_channels = d.groups * uniform(rng_, 1, 90);
    }
    d.h = uniform(rng_, 1, 19);
    d.w = uniform(rng_, 1, 23);
    d.kernel_h = uniform(rng_, 1, 5);
    d.kernel_w = uniform(rng_, 0, 4) == 0 ? 7 : uniform(rng_, 1, 5);
    d.stride_h = uniform(rng_, 1, 3);
    d.stride_w = uniform(rng_, 1, 2);
    d.dilation_h = uniform(rng_, 1, 2);
    d.dilation_w = uniform(rng_, 0, 3) == 0 ? 3 : 1;
    const int pad_mode = uniform(rng_, 0, 4);
    if (pad_mode == 0) apply_auto_pad(d, AutoPad::same_upper);
    else if (pad_mode == 1) apply_auto_pad(d, AutoPad::same_lower);
    else {
      d.pad_top = uniform(rng_, 0, 3);
      d.pad_bottom = uniform(rng_, 0, 2);
      d.pad_left = uniform(rng_, 0, 1);
      d.pad_right = uniform(rng_, 0, 3);
    }
    // Shrink the kernel until the dilated kernel fits the padded input (a 1-wide one always does).
    while (d.out_h() < 1) --d.kernel_h;
    while (d.out_w() < 1) --d.kernel_w;
    return d;
  }

  void fill_kind(OpKind kind, ConvDesc& d) {
    const DType tx = uniform(rng_, 0, 1) ? DType::uint8 : DType::int8;
    const DType tw = uniform(rng_, 0, 3) == 0 ? DType::uint8 : DType::int8;
    d.x_params = activation_params(tx);
    d.w_params = weight_params(tw, d.out_channels);
    if (kind == OpKind::conv_integer) return;
    const int act = uniform(rng_, 0, 3);
    d.activation = static_cast<ConvActivation>(act);
    if (d.activation == ConvActivation::clamp) {
      d.clamp_min = -std::exp2(static_cast<float>(uniform(rng_, -2, 3)));
      d.clamp_max = std::exp2(static_cast<float>(uniform(rng_, -2, 3)));
    }
    if (kind == OpKind::qlinear_conv) {
      d.bias = uniform(rng_, 0, 1) ? ConvBias::int32 : ConvBias::none;
      const DType ty = uniform(rng_, 0, 1) ? DType::uint8 : DType::int8;
      // About the spread of the sums, so that outputs cover the range and saturate sometimes.
      const float sy = d.x_params.scale() * d.w_params.scale(0) *
                       std::sqrt(static_cast<float>(std::max<std::int64_t>(1, d.reduction()))) *
                       std::exp2(static_cast<float>(uniform(rng_, 3, 7)));
      d.y_params = QuantizationParams::per_tensor_affine(
          ty, sy, uniform(rng_, traits(ty).qmin + 20, traits(ty).qmax - 20));
      d.requant_mode =
          uniform(rng_, 0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
    } else {
      d.bias = static_cast<ConvBias>(uniform(rng_, 0, 2));
    }
  }

  std::vector<std::uint8_t> codes(std::int64_t n) {
    std::vector<std::uint8_t> v(static_cast<std::size_t>(n));
    for (auto& b : v) b = static_cast<std::uint8_t>(uniform(rng_, 0, 255));
    return v;
  }

  static std::int64_t count(const Shape& s) {
    std::int64_t n = 1;
    for (const auto e : s) n *= e;
    return n;
  }

  // Runs `kind` on every kernel supports() lists and compares with the reference.
  void check_all_kernels(OpKind kind, const ConvDesc& d) {
    SCOPED_TRACE(describe({kind, d}));
    ASSERT_NO_THROW(reference::check_descriptor(kind, d));
    const Support s = ops().supports({kind, d});
    ASSERT_TRUE(s.supported) << s.reason;
    ASSERT_FALSE(s.kernels.empty());
    const auto x = codes(count(d.x_shape()));
    const auto w = codes(count(d.w_shape()));
    std::vector<std::byte> bias(static_cast<std::size_t>(d.out_channels) * 4);
    for (std::int64_t o = 0; o < d.out_channels; ++o) {
      if (d.bias == ConvBias::int32) {
        const std::int32_t v = uniform(rng_, -5000, 5000);
        std::memcpy(bias.data() + o * 4, &v, 4);
      } else {
        const float v = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng_);
        std::memcpy(bias.data() + o * 4, &v, 4);
      }
    }
    const std::size_t element = kind == OpKind::qlinear_conv ? 1 : 4;
    std::vector<std::byte> expected(static_cast<std::size_t>(count(d.y_shape())) * element);
    const void* bias_host = d.bias == ConvBias::none ? nullptr : bias.data();
    reference::conv(kind, d, x.data(), w.data(), bias_host, expected.data());

    DeviceArray dx(ops(), x.size()), dw(ops(), w.size()), db(ops(), bias.size()),
        dy(ops(), expected.size());
    dx.write(x);
    dw.write(w);
    db.write(bias.data(), bias.size());
    // The per-call op (the plugin's own kernel), then a plan of every kernel listed.
    dy.poison(0xCD);
    ops().conv(kind, d, dx.data(), dw.data(), bias_host ? db.data() : nullptr, dy.data());
    EXPECT_TRUE(same_bytes(dy.read(), expected, element));
    EXPECT_TRUE(dy.guards_intact());
    std::vector<const void*> in{dx.data(), dw.data()};
    if (bias_host) in.push_back(db.data());
    // Plans with W and the bias fixed: where the bound proves acc + bias inside int32 for
    // every X, the run waits for no overflow flag.
    std::vector<const void*> fixed{nullptr, w.data()};
    if (bias_host) fixed.push_back(bias_host);
    const bool proven = d.bias == ConvBias::int32 &&
                        reference::conv_int32_cannot_overflow(
                            kind, d, w.data(), reinterpret_cast<const std::int32_t*>(bias.data()));
    for (const auto& kernel : s.kernels) {
      SCOPED_TRACE("kernel " + kernel);
      dy.poison(0xCD);
      EXPECT_EQ(run_plan(ops(), {kind, d}, kernel, in, {dy.data()}), kernel);
      EXPECT_TRUE(same_bytes(dy.read(), expected, element));
      EXPECT_TRUE(dy.guards_intact());
      SCOPED_TRACE("W and bias fixed");
      dy.poison(0xCD);
      const std::uint64_t checks = overflow_checks();
      EXPECT_EQ(run_plan(ops(), {kind, d}, kernel, in, {dy.data()}, fixed), kernel);
      EXPECT_TRUE(same_bytes(dy.read(), expected, element));
      EXPECT_TRUE(dy.guards_intact());
      const std::uint64_t want_checks = d.bias == ConvBias::int32 && !proven ? 1 : 0;
      EXPECT_EQ(overflow_checks() - checks, want_checks);
    }
  }

  // An int32 bias that takes acc + bias out of int32 for these operands: the per-call op and a
  // plan of every kernel listed, with W and the bias given on each run or fixed (which the
  // bound cannot clear), throw the reference's overflow error, position and value included.
  void expect_overflow_reported(OpKind kind, const ConvDesc& d, const std::vector<std::uint8_t>& x,
                                const std::vector<std::uint8_t>& w,
                                const std::vector<std::int32_t>& bias, std::size_t y_bytes) {
    SCOPED_TRACE(describe({kind, d}));
    ASSERT_FALSE(reference::conv_int32_cannot_overflow(kind, d, w.data(), bias.data()));
    std::vector<std::uint8_t> out(y_bytes);
    std::string want;
    try {
      reference::conv(kind, d, x.data(), w.data(), bias.data(), out.data());
    } catch (const Error& e) {
      want = e.what();
    }
    ASSERT_FALSE(want.empty());
    DeviceArray dx(ops(), x.size()), dw(ops(), w.size()), db(ops(), bias.size() * 4),
        dy(ops(), y_bytes);
    dx.write(x);
    dw.write(w);
    db.write(bias);
    auto expect_error = [&](const std::function<void()>& f, const std::string& how) {
      SCOPED_TRACE(how);
      try {
        f();
        ADD_FAILURE() << "no overflow reported";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::overflow);
        EXPECT_EQ(std::string(e.what()), want);
      }
    };
    expect_error([&] { ops().conv(kind, d, dx.data(), dw.data(), db.data(), dy.data()); },
                 "per call");
    const std::vector<const void*> in{dx.data(), dw.data(), db.data()};
    for (const auto& kernel : ops().supports({kind, d}).kernels) {
      expect_error(
          [&] {
            run_plan(ops(), {kind, d}, kernel, in, {dy.data()});
          },
          "plan of " + kernel);
      expect_error(
          [&] {
            run_plan(ops(), {kind, d}, kernel, in, {dy.data()}, {nullptr, w.data(), bias.data()});
          },
          "plan of " + kernel + ", W and bias fixed");
    }
  }
};

TEST_F(CudaConv, RandomGeometriesEveryKindEveryKernel) {
  for (int i = 0; i < 40; ++i)
    for (const OpKind kind : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
      ConvDesc d = random_geometry(false);
      fill_kind(kind, d);
      check_all_kernels(kind, d);
      if (HasFatalFailure()) return;
    }
}

TEST_F(CudaConv, DepthwiseEveryKindEveryKernel) {
  for (int i = 0; i < 30; ++i)
    for (const OpKind kind : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
      ConvDesc d = random_geometry(true);
      fill_kind(kind, d);
      check_all_kernels(kind, d);
      if (HasFatalFailure()) return;
    }
}

// ResNet-like layers: C / G a multiple of 32 (the 16-byte gather), several CTAs each way.
TEST_F(CudaConv, ResNetLikeLayers) {
  struct Layer {
    std::int64_t c, h, o, k, stride;
  };
  // The last two: few output tiles over a deep reduction (the split-K tile), and C = 48 (the
  // pipelined kernel's 16-byte copies crossing kernel positions within a 64-deep step).
  for (const Layer l : {Layer{64, 28, 64, 3, 1}, Layer{128, 15, 96, 1, 2}, Layer{96, 9, 200, 3, 2},
                        Layer{256, 7, 64, 3, 1}, Layer{48, 11, 80, 3, 1}})
    for (const OpKind kind : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
      ConvDesc d;
      d.layout = uniform(rng_, 0, 1) ? ConvLayout::nhwc : ConvLayout::nchw;
      d.n = 2;
      d.c = l.c, d.h = l.h, d.w = l.h, d.out_channels = l.o;
      d.kernel_h = d.kernel_w = l.k;
      d.stride_h = d.stride_w = l.stride;
      d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = l.k / 2;
      fill_kind(kind, d);
      check_all_kernels(kind, d);
    }
}

// MobileNet-like depthwise layers: several 8x16 output tiles and 32-channel blocks, C a multiple
// of 16 (the tiled kernel's 16-byte loads) or not, strides 1 and 2, channel multipliers.
TEST_F(CudaConv, DepthwiseLayers) {
  struct Layer {
    std::int64_t c, h, multiplier, k, stride;
  };
  for (const Layer l : {Layer{48, 30, 1, 3, 1}, Layer{64, 21, 1, 3, 2}, Layer{40, 19, 2, 5, 1},
                        Layer{33, 17, 1, 3, 2}})
    for (const OpKind kind : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
      ConvDesc d;
      d.layout = uniform(rng_, 0, 1) ? ConvLayout::nhwc : ConvLayout::nchw;
      d.n = 2;
      d.c = l.c, d.h = l.h, d.w = l.h + 3, d.out_channels = l.c * l.multiplier, d.groups = l.c;
      d.kernel_h = d.kernel_w = l.k;
      d.stride_h = d.stride_w = l.stride;
      d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = l.k / 2;
      fill_kind(kind, d);
      check_all_kernels(kind, d);
    }
}

// The reduction at reference::int32_safe_reduction with extreme codes runs; one past it is
// refused with the reason.
TEST_F(CudaConv, Int32BoundClaimedAndRefused) {
  ConvDesc d;
  d.layout = ConvLayout::nhwc;
  d.n = 1, d.h = 3, d.w = 3, d.out_channels = 3;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 255);
  d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  d.kernel_h = d.kernel_w = 1;
  d.c = reference::int32_safe_reduction(d);
  const Support ok = ops().supports({OpKind::conv_integer, d});
  ASSERT_TRUE(ok.supported) << ok.reason;
  std::vector<std::uint8_t> x(static_cast<std::size_t>(count(d.x_shape())), 0);
  std::vector<std::uint8_t> w(static_cast<std::size_t>(count(d.w_shape())), 0x80);  // -128
  std::vector<std::int32_t> expected(static_cast<std::size_t>(count(d.y_shape())));
  reference::conv_integer(d, x.data(), w.data(), expected.data());
  DeviceArray dx(ops(), x.size()), dw(ops(), w.size()), dy(ops(), expected.size() * 4);
  dx.write(x);
  dw.write(w);
  ops().conv(OpKind::conv_integer, d, dx.data(), dw.data(), nullptr, dy.data());
  EXPECT_EQ(dy.read_as<std::int32_t>(), expected);

  d.c += 1;
  const Support no = ops().supports({OpKind::conv_integer, d});
  EXPECT_FALSE(no.supported);
  EXPECT_NE(no.reason.find("int32-safe"), std::string::npos) << no.reason;
}

// acc + an int32 bias that leaves int32 throws the reference's overflow error.
TEST_F(CudaConv, Int32BiasOverflowReportedAsTheReferenceDoes) {
  ConvDesc d;
  d.layout = ConvLayout::nchw;
  d.n = 1, d.c = 4, d.h = 5, d.w = 5, d.out_channels = 2;
  d.kernel_h = d.kernel_w = 3;
  d.x_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f);
  d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f);
  d.bias = ConvBias::int32;
  const std::vector<std::uint8_t> x(100, 127), w(72, 127);
  const std::vector<std::int32_t> bias = {5, std::numeric_limits<std::int32_t>::max() - 10};
  expect_overflow_reported(OpKind::conv_dequant, d, x, w, bias,
                           static_cast<std::size_t>(count(d.y_shape())) * 4);
}

// The same through the pipelined kernel's hoisted fixed-point loop (qlinear_conv, NHWC codes,
// O a multiple of 16), whose overflow test is the sign rule of the wrapped int32 sum.
TEST_F(CudaConv, Int32BiasOverflowReportedByTheFixedPointEpilogue) {
  ConvDesc d;
  d.layout = ConvLayout::nhwc;
  d.n = 1, d.c = 16, d.h = 4, d.w = 4, d.out_channels = 16;
  d.kernel_h = d.kernel_w = 3;
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
  d.x_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f);
  d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f);
  d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 0);
  d.requant_mode = RequantMode::fixed_point;
  d.bias = ConvBias::int32;
  const std::vector<std::uint8_t> x(static_cast<std::size_t>(count(d.x_shape())), 127);
  const std::vector<std::uint8_t> w(static_cast<std::size_t>(count(d.w_shape())), 127);
  std::vector<std::int32_t> bias(16, 3);
  bias[9] = std::numeric_limits<std::int32_t>::max() - 10;
  expect_overflow_reported(OpKind::qlinear_conv, d, x, w, bias,
                           static_cast<std::size_t>(count(d.y_shape())));
}

// A fixed bias the bound cannot clear, with activations that keep acc + bias inside int32: the
// plan keeps the checked path (one wait per run) and its result is the reference's.
TEST_F(CudaConv, PlanWithAnUnprovenBiasChecksAndIsExact) {
  ConvDesc d;
  d.layout = ConvLayout::nhwc;
  d.n = 2, d.c = 32, d.h = 6, d.w = 6, d.out_channels = 32;
  d.kernel_h = d.kernel_w = 3;
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 100);
  d.w_params = weight_params(DType::int8, d.out_channels);
  d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 4.0f, 10);
  d.requant_mode = uniform(rng_, 0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
  d.bias = ConvBias::int32;
  // X within 2 codes of its zero point: |acc| <= 2 * 255 * 288, far from the bias's margin.
  std::vector<std::uint8_t> x(static_cast<std::size_t>(count(d.x_shape())));
  for (auto& v : x) v = static_cast<std::uint8_t>(uniform(rng_, 98, 102));
  const auto w = codes(count(d.w_shape()));
  std::vector<std::int32_t> bias(static_cast<std::size_t>(d.out_channels));
  for (auto& b : bias) b = uniform(rng_, -1000, 1000);
  bias[static_cast<std::size_t>(uniform(rng_, 0, 31))] =
      std::numeric_limits<std::int32_t>::max() - 200000;
  SCOPED_TRACE(describe({OpKind::qlinear_conv, d}));
  ASSERT_FALSE(
      reference::conv_int32_cannot_overflow(OpKind::qlinear_conv, d, w.data(), bias.data()));
  std::vector<std::byte> expected(static_cast<std::size_t>(count(d.y_shape())));
  reference::conv(OpKind::qlinear_conv, d, x.data(), w.data(), bias.data(), expected.data());
  DeviceArray dx(ops(), x.size()), dw(ops(), w.size()), db(ops(), bias.size() * 4),
      dy(ops(), expected.size());
  dx.write(x);
  dw.write(w);
  db.write(bias);
  for (const auto& kernel : ops().supports({OpKind::qlinear_conv, d}).kernels) {
    SCOPED_TRACE("kernel " + kernel);
    const auto plan =
        ops().plan({OpKind::qlinear_conv, d},
                   PlanRequest{ops().default_device(), kernel, {nullptr, w.data(), bias.data()}});
    for (int r = 0; r < 2; ++r) {
      dy.poison(0xCD);
      const std::uint64_t checks = overflow_checks();
      plan->run({dx.data(), nullptr, nullptr}, {dy.data()});
      EXPECT_EQ(overflow_checks() - checks, 1u);
      EXPECT_TRUE(same_bytes(dy.read(), expected, 1));
      EXPECT_TRUE(dy.guards_intact());
    }
  }
}

// The pipelined kernel keeps one bit per kernel row and column (at most 16 each) and says so;
// the register-gather kernel takes larger windows. Host only: runs without a GPU.
TEST(CudaConvRefusal, PipelinedKernelRefusesWindowsPast16) {
  cuda::ConvGeometry g;
  g.n = 1, g.h = 40, g.w = 40, g.c = 16, g.oh = 24, g.ow = 40, g.o = 16;
  g.groups = 1, g.cg = 16, g.og = 16;
  g.kh = 17, g.kw = 1;
  g.k = g.cg * g.kh * g.kw, g.kp = (g.k + 63) / 64 * 64;
  const auto refused = cuda::conv_pipelined_refusal(g);
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->find("17x1 kernel"), std::string::npos) << *refused;
  g.kh = g.kw = 16, g.oh = g.ow = 25;
  g.k = g.cg * g.kh * g.kw, g.kp = (g.k + 63) / 64 * 64;
  EXPECT_FALSE(cuda::conv_pipelined_refusal(g).has_value());
}

}  // namespace
}  // namespace qforge::cuda_test
