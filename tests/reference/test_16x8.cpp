// TFLite's 16x8 reference (reference_16x8.h): the int64 requantization on hand-computed cases
// (one rounding, half toward +infinity, the reduced Q15 multiplier), the convolution and matmul
// against a direct computation on random shapes, and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "qforge/reference_16x8.h"
#include "test_support.h"

namespace qforge {
namespace {

using reference::FixedPointMultiplier;
using reference::multiply_by_quantized_multiplier_s64;

// The requantization written out independently: the reduced multiplier, the exact product, and
// a division rounded half up by quotient and remainder.
std::int64_t expected_requant(std::int64_t x, FixedPointMultiplier m) {
  const std::int64_t reduced = m.multiplier >= 0x7FFF0000 ? 0x7FFF : (m.multiplier + 32768) / 65536;
  const std::int64_t den = std::int64_t{1} << (15 - m.shift);
  const std::int64_t num = x * reduced;
  std::int64_t q = num / den, r = num % den;
  if (r < 0) --q, r += den;
  return 2 * r >= den ? q + 1 : q;
}

TEST(Reference16x8, RequantizationRoundsHalfUpOnce) {
  const FixedPointMultiplier half{1 << 30, 0};                    // 0.5: reduced to 2^14
  EXPECT_EQ(multiply_by_quantized_multiplier_s64(3, half), 2);    // 1.5 -> 2
  EXPECT_EQ(multiply_by_quantized_multiplier_s64(-3, half), -1);  // -1.5 -> -1 (toward +inf)
  EXPECT_EQ(multiply_by_quantized_multiplier_s64(-5, half), -2);  // -2.5 -> -2
  EXPECT_EQ(multiply_by_quantized_multiplier_s64(4, half), 2);
  // Q31 -> Q15 rounds: 0x40008000 becomes 0x4001 (not 0x4000), so 2^16 * it / 2^15 = 2 * 0x4001.
  EXPECT_EQ(multiply_by_quantized_multiplier_s64(1 << 16, {0x40008000, 0}), 2 * 0x4001);
  // From 0x7FFF0000 on, the reduced multiplier saturates at 0x7FFF instead of reaching 2^15.
  EXPECT_EQ(multiply_by_quantized_multiplier_s64(1 << 15, {0x7FFFFFFF, 0}), 0x7FFF);
  // Shift 7 (a multiplier just below 2^7) and -31, the ends of TFLite's range.
  EXPECT_EQ(multiply_by_quantized_multiplier_s64(100, {1 << 30, 7}), 6400);
  EXPECT_EQ(multiply_by_quantized_multiplier_s64(std::int64_t{1} << 46, {1 << 30, -31}), 16384);
  EXPECT_EQ(multiply_by_quantized_multiplier_s64(0, {0, 0}), 0);
}

TEST(Reference16x8, RequantizationMatchesTheWrittenOutFormula) {
  QFORGE_SEEDED_RNG(rng);
  for (int i = 0; i < 20000; ++i) {
    const double real = std::ldexp(test::uniform(rng, 0.5f, 1.0f),
                                   static_cast<int>(test::uniform_int(rng, -30, 7)));
    const FixedPointMultiplier m = reference::quantize_multiplier(real);
    const std::int64_t bits = test::uniform_int(rng, 1, 47);
    const std::int64_t x =
        test::uniform_int(rng, -(std::int64_t{1} << bits), (std::int64_t{1} << bits) - 1);
    ASSERT_EQ(multiply_by_quantized_multiplier_s64(x, m), expected_requant(x, m))
        << "x = " << x << ", multiplier " << m.multiplier << ", shift " << m.shift;
  }
}

TEST(Reference16x8, RequantizationRefusesTFLitesPreconditions) {
  const std::int64_t limit = std::int64_t{1} << 47;
  EXPECT_EQ(multiply_by_quantized_multiplier_s64(-limit, {1 << 30, -31}), -16384 * 2);
  try {
    multiply_by_quantized_multiplier_s64(limit, {1 << 30, 0});
    FAIL() << "expected an overflow error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::overflow);
    EXPECT_NE(std::string(e.what()).find("2^47"), std::string::npos) << e.what();
  }
  EXPECT_THROW(multiply_by_quantized_multiplier_s64(1, {1 << 30, 8}), Error);
  EXPECT_THROW(multiply_by_quantized_multiplier_s64(1, {1 << 30, -32}), Error);
  EXPECT_THROW(multiply_by_quantized_multiplier_s64(1, {-(1 << 30), 0}), Error);
}

// The multiplier is TFLite's: the effective scale in double, whose Q31 form keeps the bits a
// float32 ratio (24 significant bits) would round away.
TEST(Reference16x8, MultiplierIsTheDoubleRatio) {
  const float sx = 0.0123f, sw = 0.0456f, sy = 0.789f;
  const FixedPointMultiplier m = reference::multiplier_16x8(sx, sw, sy, "test", "channel 0");
  const FixedPointMultiplier expected = reference::quantize_multiplier(
      static_cast<double>(sx) * static_cast<double>(sw) / static_cast<double>(sy));
  EXPECT_EQ(m.multiplier, expected.multiplier);
  EXPECT_EQ(m.shift, expected.shift);
  EXPECT_NE(m.multiplier, reference::quantize_multiplier((sx * sw) / sy).multiplier);
  // (1 + 2^-23) * 128 (1 - 2^-23) = 128 (1 - 2^-46) is below 2^7, but its Q31 form rounds up
  // to 2^7 (a shift of 8): refused, as an infinite ratio is.
  try {
    reference::multiplier_16x8(1.0f + 0x1p-23f, 128.0f * (1.0f - 0x1p-23f), 1.0f, "test",
                               "channel 3");
    FAIL() << "a multiplier that rounds to 2^7 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("for channel 3; expected a finite multiplier below 2^7"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(reference::multiplier_16x8(1.0f, 1.0f, 0.0f, "test", "channel 0"), Error);
}

struct Case16x8 {
  ConvDesc d;
  std::vector<std::int16_t> x;
  std::vector<std::int8_t> w;
  std::vector<std::int64_t> bias;
};

Case16x8 random_case(std::mt19937_64& rng) {
  Case16x8 c;
  ConvDesc& d = c.d;
  d.n = test::uniform_int(rng, 1, 2);
  d.groups = test::uniform_int(rng, 1, 3);
  d.c = d.groups * test::uniform_int(rng, 1, 3);
  d.out_channels = d.groups * test::uniform_int(rng, 1, 3);
  d.h = test::uniform_int(rng, 1, 7);
  d.w = test::uniform_int(rng, 1, 7);
  d.kernel_h = test::uniform_int(rng, 1, 3);
  d.kernel_w = test::uniform_int(rng, 1, 3);
  d.stride_h = test::uniform_int(rng, 1, 2);
  d.stride_w = test::uniform_int(rng, 1, 2);
  d.pad_top = d.pad_bottom = d.kernel_h / 2 + 1;
  d.pad_left = d.pad_right = d.kernel_w / 2;
  d.x_params =
      QuantizationParams::per_tensor_symmetric(DType::int16, test::uniform(rng, 1e-4f, 1e-2f));
  std::vector<float> sw(static_cast<std::size_t>(d.out_channels));
  for (float& s : sw) s = test::uniform(rng, 1e-3f, 1e-1f);
  d.w_params = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sw,
                                               std::vector<std::int32_t>(sw.size(), 0));
  d.y_params =
      QuantizationParams::per_tensor_symmetric(DType::int16, test::uniform(rng, 1e-4f, 1e-2f));
  d.requant_mode = RequantMode::fixed_point;
  d.activation = test::uniform_int(rng, 0, 1) ? ConvActivation::relu : ConvActivation::none;
  c.x.resize(static_cast<std::size_t>(d.n * d.c * d.h * d.w));
  for (auto& v : c.x) v = static_cast<std::int16_t>(test::uniform_int(rng, -32768, 32767));
  c.w.resize(static_cast<std::size_t>(d.out_channels * (d.c / d.groups) * d.kernel_h * d.kernel_w));
  for (auto& v : c.w) v = static_cast<std::int8_t>(test::uniform_int(rng, -127, 127));
  c.bias.resize(static_cast<std::size_t>(d.out_channels));
  for (auto& v : c.bias)
    v = test::uniform_int(rng, -(std::int64_t{1} << 40), std::int64_t{1} << 40);
  return c;
}

TEST(Reference16x8, ConvMatchesADirectComputation) {
  QFORGE_SEEDED_RNG(rng);
  for (int iter = 0; iter < 200; ++iter) {
    const Case16x8 c = random_case(rng);
    const ConvDesc& d = c.d;
    const std::int64_t oh_n = d.out_h(), ow_n = d.out_w(), cg = d.c / d.groups;
    std::vector<std::int16_t> y(static_cast<std::size_t>(d.n * d.out_channels * oh_n * ow_n));
    reference::qlinear_conv_16x8(d, c.x.data(), c.w.data(), c.bias.data(), y.data());
    std::size_t i = 0;
    for (std::int64_t n = 0; n < d.n; ++n)
      for (std::int64_t o = 0; o < d.out_channels; ++o) {
        // TFLite's effective scale, in double.
        const FixedPointMultiplier m = reference::quantize_multiplier(
            static_cast<double>(d.x_params.scale()) *
            static_cast<double>(d.w_params.scale(static_cast<std::size_t>(o))) /
            static_cast<double>(d.y_params->scale()));
        for (std::int64_t oh = 0; oh < oh_n; ++oh)
          for (std::int64_t ow = 0; ow < ow_n; ++ow, ++i) {
            std::int64_t acc = c.bias[static_cast<std::size_t>(o)];
            for (std::int64_t ci = 0; ci < cg; ++ci)
              for (std::int64_t kh = 0; kh < d.kernel_h; ++kh)
                for (std::int64_t kw = 0; kw < d.kernel_w; ++kw) {
                  const std::int64_t ih = oh * d.stride_h - d.pad_top + kh;
                  const std::int64_t iw = ow * d.stride_w - d.pad_left + kw;
                  if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w) continue;
                  const std::int64_t g = o / (d.out_channels / d.groups);
                  acc += std::int64_t{c.x[static_cast<std::size_t>(
                             ((n * d.c + g * cg + ci) * d.h + ih) * d.w + iw)]} *
                         c.w[static_cast<std::size_t>(
                             ((o * cg + ci) * d.kernel_h + kh) * d.kernel_w + kw)];
                }
            const std::int64_t lo = d.activation == ConvActivation::relu ? 0 : -32768;
            const std::int64_t want = std::clamp<std::int64_t>(expected_requant(acc, m), lo, 32767);
            ASSERT_EQ(y[i], want) << "case " << iter << " at (" << n << ", " << o << ", " << oh
                                  << ", " << ow << "), acc " << acc;
          }
      }
  }
}

TEST(Reference16x8, MatmulEqualsTheOneByOneConvolution) {
  QFORGE_SEEDED_RNG(rng);
  for (int iter = 0; iter < 50; ++iter) {
    const std::int64_t m = test::uniform_int(rng, 1, 4), k = test::uniform_int(rng, 1, 40),
                       n = test::uniform_int(rng, 1, 9);
    std::vector<float> sb(static_cast<std::size_t>(n));
    for (float& s : sb) s = test::uniform(rng, 1e-3f, 1e-1f);
    MatmulDesc md{
        m, n, k,
        QuantizationParams::per_tensor_symmetric(DType::int16, test::uniform(rng, 1e-4f, 1e-2f)),
        QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sb,
                                        std::vector<std::int32_t>(sb.size(), 0))};
    md.b_layout = MatrixLayout::nk;
    md.y = QuantizationParams::per_tensor_symmetric(DType::int16, test::uniform(rng, 1e-3f, 1e-1f));
    md.requant_mode = RequantMode::fixed_point;
    std::vector<std::int16_t> a(static_cast<std::size_t>(m * k));
    for (auto& v : a) v = static_cast<std::int16_t>(test::uniform_int(rng, -32768, 32767));
    std::vector<std::int8_t> b(static_cast<std::size_t>(n * k));
    for (auto& v : b) v = static_cast<std::int8_t>(test::uniform_int(rng, -127, 127));
    std::vector<std::int64_t> bias(static_cast<std::size_t>(n));
    for (auto& v : bias) v = test::uniform_int(rng, -(1 << 24), 1 << 24);
    std::vector<std::int16_t> y(static_cast<std::size_t>(m * n)), yc(y.size());
    reference::qlinear_matmul_16x8(md, a.data(), b.data(), bias.data(), y.data());
    ConvDesc d;  // row r of A as a [K, 1, 1] image: NHWC with H = W = 1 is [M, K]
    d.layout = ConvLayout::nhwc;
    d.n = m, d.c = k, d.h = 1, d.w = 1, d.out_channels = n;
    d.x_params = md.a;
    d.w_params = md.b;
    d.y_params = md.y;
    d.requant_mode = RequantMode::fixed_point;
    reference::qlinear_conv_16x8(d, a.data(), b.data(), bias.data(), yc.data());
    ASSERT_EQ(y, yc) << "case " << iter;
  }
}

void expect_refused(const ConvDesc& d, const char* what) {
  const std::vector<std::int16_t> x(static_cast<std::size_t>(d.n * d.c * d.h * d.w));
  const std::vector<std::int8_t> w(static_cast<std::size_t>(d.out_channels * d.c));
  std::vector<std::int16_t> y(static_cast<std::size_t>(d.n * d.out_channels * d.h * d.w));
  try {
    reference::qlinear_conv_16x8(d, x.data(), w.data(), nullptr, y.data());
    FAIL() << "expected a refusal mentioning '" << what << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(Reference16x8, RefusesWhatIsNot16x8) {
  ConvDesc d;
  d.n = d.c = d.h = d.w = d.out_channels = 1;
  d.x_params = QuantizationParams::per_tensor_symmetric(DType::int16, 0.01f);
  d.y_params = QuantizationParams::per_tensor_symmetric(DType::int16, 0.01f);
  d.requant_mode = RequantMode::fixed_point;
  ConvDesc e = d;
  e.x_params = QuantizationParams::per_tensor_affine(DType::int16, 0.01f, 3);
  expect_refused(e, "X params");
  e = d;
  e.y_params = QuantizationParams::per_tensor_symmetric(DType::int8, 0.01f);
  expect_refused(e, "Y params");
  e = d;
  e.w_params = QuantizationParams::per_tensor_affine(DType::int8, 0.01f, 1);
  expect_refused(e, "W params");
  e = d;
  e.bias = ConvBias::int32;
  expect_refused(e, "bias");
  e = d;
  e.requant_mode = RequantMode::float_multiplier;
  expect_refused(e, "fixed_point");
  e = d;
  e.y_params = QuantizationParams::per_tensor_symmetric(DType::int16, 1e-6f);
  expect_refused(e, "below 2^7");
  // The op table's qlinear_conv, and so every backend, refuses int16 activations.
  e = d;
  e.bias = ConvBias::none;
  EXPECT_THROW(reference::check_descriptor(OpKind::qlinear_conv, e), Error);
  // acc + bias beyond 2^47.
  const std::vector<std::int16_t> x{1};
  const std::vector<std::int8_t> w{1};
  const std::vector<std::int64_t> bias{std::int64_t{1} << 47};
  std::vector<std::int16_t> y(1);
  try {
    reference::qlinear_conv_16x8(d, x.data(), w.data(), bias.data(), y.data());
    FAIL() << "expected an overflow error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::overflow);
  }
}

}  // namespace
}  // namespace qforge
