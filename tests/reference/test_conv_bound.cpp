// reference::conv_int32_bound and conv_int32_cannot_overflow against brute force: every
// activation of a two-term window enumerated through the reference convolution (the range is
// exact there), and on random geometries with padding, strides, dilations and groups every
// output inside the range and the extreme activation reaching its ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "qforge/conv_bound.h"
#include "qforge/error.h"
#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

using test::uniform_int;

std::int64_t count(const Shape& s) {
  std::int64_t n = 1;
  for (const auto e : s) n *= e;
  return n;
}

// Random params for X and W (uint8 or int8, any zero point; W per tensor or per channel).
void random_params(std::mt19937_64& rng, ConvDesc& d) {
  const DType tx = uniform_int(rng, 0, 1) ? DType::uint8 : DType::int8;
  const DType tw = uniform_int(rng, 0, 2) == 0 ? DType::uint8 : DType::int8;
  const auto& trx = traits(tx);
  const auto& trw = traits(tw);
  d.x_params = QuantizationParams::per_tensor_affine(
      tx, 0.5f, static_cast<std::int32_t>(uniform_int(rng, trx.qmin, trx.qmax)));
  if (uniform_int(rng, 0, 1)) {
    std::vector<float> s(static_cast<std::size_t>(d.out_channels), 0.25f);
    std::vector<std::int32_t> z(s.size());
    for (auto& v : z) v = static_cast<std::int32_t>(uniform_int(rng, trw.qmin, trw.qmax));
    d.w_params = QuantizationParams::per_channel(tw, Mapping::affine, 0, s, z);
  } else {
    d.w_params = QuantizationParams::per_tensor_affine(
        tw, 0.25f, static_cast<std::int32_t>(uniform_int(rng, trw.qmin, trw.qmax)));
  }
}

// Weight codes, a quarter of them at the dtype's ends.
std::vector<std::uint8_t> random_weights(std::mt19937_64& rng, const ConvDesc& d) {
  std::vector<std::uint8_t> w(static_cast<std::size_t>(count(d.w_shape())));
  for (auto& v : w) {
    const auto r = uniform_int(rng, 0, 7);
    v = static_cast<std::uint8_t>(r == 0   ? 0x80
                                  : r == 1 ? 0x7F
                                  : r == 2 ? 0x00
                                  : r == 3 ? 0xFF
                                           : uniform_int(rng, 0, 255));
  }
  return w;
}

std::int32_t w_zero_point(const ConvDesc& d, std::int64_t o) {
  return d.w_params.zero_point(
      d.w_params.scheme().granularity == Granularity::per_tensor ? 0 : static_cast<std::size_t>(o));
}

// Two-term windows (two channels under a 1x1 kernel, or one channel under a 1x2 kernel) and
// depthwise one-term windows: batch 65536 (or 256) holds every activation, and each channel's
// smallest and largest output are the bound's ends exactly.
TEST(ConvInt32Bound, EqualsBruteForceOverEveryActivation) {
  QFORGE_SEEDED_RNG(rng);
  for (int trial = 0; trial < 12; ++trial) {
    ConvDesc d;
    d.layout = ConvLayout::nchw;
    const int shape = trial % 3;
    if (shape == 0) d.c = 2, d.h = d.w = 1, d.out_channels = uniform_int(rng, 1, 4);
    if (shape == 1) d.c = 1, d.h = 1, d.w = 2, d.kernel_w = 2, d.out_channels = 3;
    if (shape == 2)
      d.c = 2, d.groups = 2, d.h = d.w = 1, d.out_channels = 2 * uniform_int(rng, 1, 3);
    const std::int64_t terms = d.c * d.h * d.w;  // X elements per image
    d.n = terms == 2 ? 65536 : 256;
    random_params(rng, d);
    d.bias = ConvBias::int32;
    d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
    SCOPED_TRACE(describe({OpKind::qlinear_conv, d}));
    const auto w = random_weights(rng, d);
    std::vector<std::int32_t> bias(static_cast<std::size_t>(d.out_channels));
    for (auto& b : bias) b = static_cast<std::int32_t>(uniform_int(rng, -100000, 100000));
    // Image n holds the codes of n's bytes.
    std::vector<std::uint8_t> x(static_cast<std::size_t>(count(d.x_shape())));
    for (std::int64_t n = 0; n < d.n; ++n)
      for (std::int64_t i = 0; i < terms; ++i)
        x[static_cast<std::size_t>(n * terms + i)] = static_cast<std::uint8_t>(n >> (8 * i));
    std::vector<std::int32_t> acc(static_cast<std::size_t>(count(d.y_shape())));
    ConvDesc plain = d;  // conv_integer takes no bias; it is added below
    plain.bias = ConvBias::none;
    plain.y_params.reset();
    reference::conv_integer(plain, x.data(), w.data(), acc.data());
    const auto ranges = reference::conv_int32_bound(OpKind::qlinear_conv, d, w.data(), bias.data());
    ASSERT_EQ(ranges.size(), static_cast<std::size_t>(d.out_channels));
    for (std::int64_t o = 0; o < d.out_channels; ++o) {
      std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = -lo;
      for (std::int64_t n = 0; n < d.n; ++n) {  // Y is [N, O, 1, 1]
        const std::int64_t v =
            std::int64_t{acc[static_cast<std::size_t>(n * d.out_channels + o)]} + bias[o];
        lo = std::min(lo, v), hi = std::max(hi, v);
      }
      EXPECT_EQ(ranges[static_cast<std::size_t>(o)].lo, lo) << "channel " << o;
      EXPECT_EQ(ranges[static_cast<std::size_t>(o)].hi, hi) << "channel " << o;
    }
  }
}

// Random geometries: every output of random activations lies in its channel's range, and with a
// single output pixel whose window is all of X, the activation at qmax where W - zw > 0 and at
// qmin elsewhere reaches hi (the opposite choice lo).
TEST(ConvInt32Bound, HoldsOnRandomGeometriesAndIsReached) {
  QFORGE_SEEDED_RNG(rng);
  for (int trial = 0; trial < 60; ++trial) {
    ConvDesc d;
    d.layout = uniform_int(rng, 0, 1) ? ConvLayout::nhwc : ConvLayout::nchw;
    d.groups = uniform_int(rng, 1, 3);
    d.c = d.groups * uniform_int(rng, 1, 5);
    d.out_channels = d.groups * uniform_int(rng, 1, 4);
    d.kernel_h = uniform_int(rng, 1, 4), d.kernel_w = uniform_int(rng, 1, 4);
    const bool single = trial % 2 == 0;
    if (single) {
      d.n = 1, d.h = d.kernel_h, d.w = d.kernel_w;
    } else {
      d.n = uniform_int(rng, 1, 2), d.h = uniform_int(rng, 1, 9), d.w = uniform_int(rng, 1, 9);
      d.stride_h = uniform_int(rng, 1, 2), d.dilation_w = uniform_int(rng, 1, 2);
      d.pad_top = uniform_int(rng, 0, 2), d.pad_bottom = uniform_int(rng, 0, 2);
      d.pad_left = uniform_int(rng, 0, 2), d.pad_right = uniform_int(rng, 0, 2);
      while (d.out_h() < 1) --d.kernel_h;
      while (d.out_w() < 1) --d.kernel_w;
    }
    random_params(rng, d);
    SCOPED_TRACE(describe({OpKind::conv_integer, d}));
    const auto w = random_weights(rng, d);
    const auto ranges = reference::conv_int32_bound(OpKind::conv_integer, d, w.data(), nullptr);
    const auto& tr = traits(d.x_params.dtype());
    const std::int64_t oc = d.out_channels, pixels = d.out_h() * d.out_w();
    std::vector<std::uint8_t> x(static_cast<std::size_t>(count(d.x_shape())));
    std::vector<std::int32_t> y(static_cast<std::size_t>(count(d.y_shape())));
    auto channel_of = [&](std::size_t i) {
      const auto e = static_cast<std::int64_t>(i);
      return d.layout == ConvLayout::nhwc ? e % oc : e / pixels % oc;
    };
    if (!single) {
      for (auto& v : x) v = static_cast<std::uint8_t>(uniform_int(rng, 0, 255));
      reference::conv_integer(d, x.data(), w.data(), y.data());
      for (std::size_t i = 0; i < y.size(); ++i) {
        const auto& r = ranges[static_cast<std::size_t>(channel_of(i))];
        EXPECT_TRUE(r.lo <= y[i] && y[i] <= r.hi)
            << "output " << i << " = " << y[i] << " outside [" << r.lo << ", " << r.hi << "]";
      }
      continue;
    }
    // One pixel: X[ci, kh, kw] of channel o's group is its window's term k.
    const std::int64_t o = uniform_int(rng, 0, oc - 1), cg = d.c / d.groups;
    const std::int64_t c0 = o / (oc / d.groups) * cg, per_o = cg * d.kernel_h * d.kernel_w;
    for (const bool top : {true, false}) {
      for (std::int64_t k = 0; k < per_o; ++k) {
        const std::int64_t ci = c0 + k / (d.kernel_h * d.kernel_w),
                           p = k % (d.kernel_h * d.kernel_w);
        const std::int32_t c =
            load_element(d.w_params.dtype(), w.data(), static_cast<std::size_t>(o * per_o + k)) -
            w_zero_point(d, o);
        const std::int32_t code = (c > 0) == top ? tr.qmax : tr.qmin;
        const std::int64_t idx = d.layout == ConvLayout::nchw ? ci * d.h * d.w + p : p * d.c + ci;
        store_element(d.x_params.dtype(), x.data(), static_cast<std::size_t>(idx), code);
      }
      reference::conv_integer(d, x.data(), w.data(), y.data());
      const auto& r = ranges[static_cast<std::size_t>(o)];
      EXPECT_EQ(y[static_cast<std::size_t>(o)], top ? r.hi : r.lo) << "channel " << o;
    }
  }
}

// The int32 decision at its edge: the largest bias that keeps acc + bias inside int32 passes,
// one more fails and the reference finds that overflow; acc alone outside int32 fails too, even
// when the bias brings acc + bias back inside.
TEST(ConvInt32Bound, CannotOverflowDecidesAtTheEdge) {
  QFORGE_SEEDED_RNG(rng);
  ConvDesc d;
  d.layout = ConvLayout::nchw;
  d.n = 1, d.c = static_cast<std::int64_t>(uniform_int(rng, 2, 40)), d.h = d.w = 3;
  d.kernel_h = d.kernel_w = 3, d.out_channels = 2;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 0);
  d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f);
  d.bias = ConvBias::int32;
  d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
  const auto w = random_weights(rng, d);
  const auto ranges = reference::conv_int32_bound(OpKind::qlinear_conv, d, w.data(), nullptr);
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  std::vector<std::int32_t> bias = {0, static_cast<std::int32_t>(kMax - ranges[1].hi)};
  EXPECT_TRUE(
      reference::conv_int32_cannot_overflow(OpKind::qlinear_conv, d, w.data(), bias.data()));
  if (ranges[1].hi > 0) {  // one more reaches past int32 at channel 1's extreme activation
    ++bias[1];
    EXPECT_FALSE(
        reference::conv_int32_cannot_overflow(OpKind::qlinear_conv, d, w.data(), bias.data()));
    std::vector<std::uint8_t> x(static_cast<std::size_t>(count(d.x_shape())));
    const std::int64_t per_o = d.c * 9;
    for (std::int64_t k = 0; k < per_o; ++k)
      x[static_cast<std::size_t>(k)] =
          static_cast<std::int8_t>(w[static_cast<std::size_t>(per_o + k)]) > 0 ? 255 : 0;
    std::vector<std::uint8_t> y(2);
    try {
      reference::qlinear_conv(d, x.data(), w.data(), bias.data(), y.data());
      ADD_FAILURE() << "the reference found no overflow";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::overflow) << e.what();
    }
  }

  // acc alone past int32: 65794 terms of (-128 - 0) * (-128 - 127) = 32640 exceed 2^31 - 1.
  ConvDesc big;
  big.n = 1, big.c = 65794, big.h = big.w = 1, big.out_channels = 1;
  big.x_params = QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 127);
  big.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f);
  big.bias = ConvBias::int32;
  big.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
  const std::vector<std::uint8_t> wb(65794, 0x80);
  const auto r = reference::conv_int32_bound(OpKind::qlinear_conv, big, wb.data(), nullptr);
  EXPECT_EQ(r[0].hi, std::int64_t{65794} * 32640);
  EXPECT_EQ(r[0].lo, 0);
  const std::int32_t minus = -1000000000;  // r.hi + minus fits int32, r.hi does not
  EXPECT_FALSE(reference::conv_int32_cannot_overflow(OpKind::qlinear_conv, big, wb.data(), &minus));
}

TEST(ConvInt32Bound, RefusesOtherOpsAndNullWeights) {
  ConvDesc d;
  d.n = 1, d.c = 1, d.h = d.w = 1, d.out_channels = 1;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 0);
  d.w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f);
  const std::uint8_t w = 1;
  EXPECT_THROW(reference::conv_int32_bound(OpKind::matmul_integer, d, &w, nullptr), Error);
  EXPECT_THROW(reference::conv_int32_bound(OpKind::conv_integer, d, nullptr, nullptr), Error);
  EXPECT_EQ(reference::conv_int32_bound(OpKind::conv_integer, d, &w, nullptr)[0].hi, 255);
}

}  // namespace
}  // namespace qforge
