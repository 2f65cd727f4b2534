// quantize / dequantize / requantize / dynamic_quantize_linear against qforge::reference, byte
// for byte, on random tensors seeded with the values that break naive kernels: exact ties of
// round-half-to-even, NaN, +-inf, -0, huge values, denormals; odd lengths so every vector tail
// runs; every granularity and axis.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>

#include "qforge/error.h"
#include "qforge/half.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cpu_x86_test {
namespace {

std::vector<float> nasty_floats(Rng& rng, std::int64_t n, float scale) {
  std::vector<float> x(static_cast<std::size_t>(n));
  std::uniform_int_distribution<int> kind(0, 19);
  std::uniform_real_distribution<float> wide(-300.0f, 300.0f);
  std::uniform_int_distribution<int> tie(-300, 300);
  for (auto& v : x) {
    switch (kind(rng)) {
      case 0: v = std::numeric_limits<float>::quiet_NaN(); break;
      case 1: v = std::numeric_limits<float>::infinity(); break;
      case 2: v = -std::numeric_limits<float>::infinity(); break;
      case 3: v = -0.0f; break;
      case 4: v = 1e30f * (tie(rng) < 0 ? -1.0f : 1.0f); break;
      case 5: v = std::numeric_limits<float>::denorm_min() * static_cast<float>(tie(rng)); break;
      case 6:
      case 7:
      case 8:  // an exact tie of x / s when s is a power of two
        v = (static_cast<float>(tie(rng)) + 0.5f) * scale;
        break;
      default: v = wide(rng) * scale;
    }
  }
  return x;
}

// The float tensor in the descriptor's float type (f16/bf16 round once, as a user's data would).
std::vector<std::uint8_t> as_float_type(const std::vector<float>& x, FloatType t) {
  std::vector<std::uint8_t> out(x.size() * static_cast<std::size_t>(size_of(t)));
  for (std::size_t i = 0; i < x.size(); ++i) store_float(t, out.data(), i, x[i]);
  return out;
}

// std::aligned_alloc requires a size that is a multiple of the alignment (C11 7.22.3.1;
// ASan aborts otherwise): round up.
void* aligned_alloc_64(std::size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  return p;
}

struct Case {
  Shape shape;
  Granularity g;
  int axis;
  std::int64_t block;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::vector<Shape> shapes = {{},        {1},     {7},        {31},    {33},
                                     {100},     {3, 5},  {2, 3, 37}, {4, 64}, {5, 1, 9},
                                     {2, 1000}, {70001}, {2, 65600}};  // rows longer than one task
  for (const auto& s : shapes) {
    out.push_back({s, Granularity::per_tensor, 0, 0});
    for (int axis = 0; axis < static_cast<int>(s.size()); ++axis)
      out.push_back({s, Granularity::per_channel, axis, 0});
    if (!s.empty()) out.push_back({s, Granularity::per_channel, -1, 0});
    if (!s.empty())
      for (std::int64_t b : {1, 4, 7, 32}) out.push_back({s, Granularity::block, 0, b});
  }
  return out;
}

std::int64_t pairs_for(const Case& c) {
  if (c.g == Granularity::per_tensor) return 1;
  const auto rank = static_cast<int>(c.shape.size());
  if (c.g == Granularity::per_channel)
    return c.shape[static_cast<std::size_t>(c.axis < 0 ? c.axis + rank : c.axis)];
  const std::int64_t last = c.shape.back();
  return element_count(c.shape) / std::max<std::int64_t>(last, 1) *
         ((last + c.block - 1) / c.block);
}

QuantizationParams params_for(Rng& rng, const Case& c, DType t, bool symmetric, bool pow2) {
  QuantizationParams p =
      random_params(rng, t, c.g, symmetric, pairs_for(c), c.axis, c.block ? c.block : 32);
  if (!pow2) return p;
  std::vector<float> s(p.scales().size(), 0.25f);  // ties of x / s become exact
  return QuantizationParams(
      t, p.scheme(), s, std::vector<std::int32_t>(p.zero_points().begin(), p.zero_points().end()));
}

class CpuX86Quantize : public ::testing::Test {
 protected:
  void SetUp() override {
    loaded_ = load_plugin();
    if (!loaded_.ops) GTEST_SKIP() << loaded_.why_missing;
    if (!loaded_.ops->availability().usable) GTEST_SKIP() << loaded_.ops->availability().reason;
  }
  Loaded loaded_;
};

TEST_F(CpuX86Quantize, MatchesReferenceBitForBit) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  int checked = 0;
  for (const Case& c : cases())
    for (DType t : {DType::int8, DType::uint8})
      for (bool symmetric : {false, true})
        for (FloatType ft : {FloatType::f32, FloatType::f16, FloatType::bf16}) {
          const bool pow2 = (checked % 2) == 0;
          const QuantizationParams p = params_for(rng, c, t, symmetric, pow2);
          const std::int64_t n = element_count(c.shape);
          const auto x = as_float_type(nasty_floats(rng, n, pow2 ? 0.25f : p.scale(0)), ft);
          const QuantizeDesc d{c.shape, p, ft};
          std::vector<std::uint8_t> want(static_cast<std::size_t>(n)),
              got(static_cast<std::size_t>(n), 0xA5);
          reference::quantize(d, x.data(), want.data());
          ops.quantize(d, x.data(), got.data());
          ASSERT_EQ(own_kernel(ops, {OpKind::quantize, d}), "q8_quantize__avx2");
          for (std::int64_t i = 0; i < n; ++i)
            ASSERT_EQ(got[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)])
                << "element " << i << " of shape " << to_string(c.shape) << " " << p.to_string()
                << " float type " << name(ft)
                << " x = " << load_float(ft, x.data(), static_cast<std::size_t>(i));

          // and back
          std::vector<float> fwant(static_cast<std::size_t>(n)),
              fgot(static_cast<std::size_t>(n), -7.0f);
          reference::dequantize(d, want.data(), fwant.data());
          ops.dequantize(d, want.data(), fgot.data());
          ASSERT_EQ(own_kernel(ops, {OpKind::dequantize, d}), "q8_dequantize__avx2");
          ASSERT_EQ(0, std::memcmp(fgot.data(), fwant.data(), fgot.size() * sizeof(float)))
              << "dequantize of shape " << to_string(c.shape) << " " << p.to_string();
          ++checked;
        }
  EXPECT_GT(checked, 100);
}

// Tensors over 8 MiB are written with non-temporal stores after an aligning head; check them,
// with outputs deliberately misaligned, per tensor and block-wise.
TEST_F(CpuX86Quantize, LargeTensorsWithStreamingStoresMatchReference) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  const std::int64_t n = (std::int64_t{9} << 20) + 37;  // 9 Mi + 37 elements: > 8 MiB of bytes
  const auto x = nasty_floats(rng, n, 0.25f);
  for (bool block : {false, true}) {
    const QuantizationParams p =
        block ? random_params(rng, DType::int8, Granularity::block, false, (n + 31) / 32, 0, 32)
              : QuantizationParams::per_tensor_affine(DType::uint8, 0.25f, 100);
    const QuantizeDesc d{{n}, p, FloatType::f32};
    std::vector<std::uint8_t> want(static_cast<std::size_t>(n));
    reference::quantize(d, x.data(), want.data());
    // Outputs 32-byte aligned, 16-byte aligned and odd: the three store kinds of the kernels.
    std::unique_ptr<std::uint8_t[], decltype(&std::free)> got(
        static_cast<std::uint8_t*>(aligned_alloc_64(static_cast<std::size_t>(n) + 64)), &std::free);
    for (int offset : {0, 16, 1}) {
      std::fill(got.get(), got.get() + n + 64, std::uint8_t{0xAB});
      ops.quantize(d, x.data(), got.get() + offset);
      ASSERT_EQ(0, std::memcmp(got.get() + offset, want.data(), want.size()))
          << p.to_string() << " offset " << offset;
      EXPECT_EQ(got[static_cast<std::size_t>(n + offset)], 0xAB)
          << "wrote past the end, offset " << offset;
    }
    std::vector<float> fwant(static_cast<std::size_t>(n));
    reference::dequantize(d, want.data(), fwant.data());
    // 64-byte aligned (the streaming path), 16 bytes past that (16-byte streaming stores for
    // blocks) and 4 bytes past it (head, then streaming).
    std::unique_ptr<float[], decltype(&std::free)> fgot(
        static_cast<float*>(aligned_alloc_64((static_cast<std::size_t>(n) + 16) * sizeof(float))),
        &std::free);
    for (int offset : {0, 4, 1}) {
      std::fill(fgot.get(), fgot.get() + n + 16, -1.0f);
      ops.dequantize(d, want.data(), fgot.get() + offset);
      ASSERT_EQ(0, std::memcmp(fgot.get() + offset, fwant.data(), fwant.size() * sizeof(float)))
          << p.to_string() << " offset " << offset;
    }
  }
}

TEST_F(CpuX86Quantize, OtherDtypesRunTheReferenceAndSaySo) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  for (DType t : {DType::int4, DType::uint4, DType::int16, DType::binary}) {
    const QuantizationParams p = t == DType::binary
                                     ? QuantizationParams::per_tensor_symmetric(t, 1.0f)
                                     : QuantizationParams::per_tensor_affine(t, 0.5f, 1);
    const QuantizeDesc d{{37}, p, FloatType::f32};
    const auto x = nasty_floats(rng, 37, 0.5f);
    std::vector<std::uint8_t> want(storage_bytes(t, 37)), got(want.size(), 0xA5);
    reference::quantize(d, x.data(), want.data());
    ops.quantize(d, x.data(), got.data());
    EXPECT_EQ(got, want) << name(t);
    EXPECT_EQ(own_kernel(ops, {OpKind::quantize, d}), "reference");
    const Support s = ops.supports({OpKind::quantize, d});
    ASSERT_TRUE(s.supported);
    EXPECT_EQ(s.kernels, std::vector<std::string>{"reference"});
  }
  const QuantizeDesc log{{5}, QuantizationParams::logarithmic(DType::int8, 1.0f), FloatType::f32};
  const std::vector<float> x = {0.1f, -0.5f, 1.0f, 0.0f, 3.0f};
  std::vector<std::uint8_t> want(5), got(5);
  reference::quantize(log, x.data(), want.data());
  ops.quantize(log, x.data(), got.data());
  EXPECT_EQ(got, want);
  EXPECT_EQ(own_kernel(ops, {OpKind::quantize, log}), "reference");
}

TEST_F(CpuX86Quantize, RequantizeMatchesReference) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  std::uniform_int_distribution<std::int32_t> wide(std::numeric_limits<std::int32_t>::min(),
                                                   std::numeric_limits<std::int32_t>::max());
  std::uniform_int_distribution<std::int32_t> narrow(-100000, 100000);
  std::uniform_real_distribution<float> mult(0.0f, 0.01f);
  for (const Shape& shape : std::vector<Shape>{{1}, {45}, {3, 17}, {4, 5, 9}})
    for (int axis = -1; axis < static_cast<int>(shape.size()); ++axis)
      for (DType t : {DType::int8, DType::uint8})
        for (RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point}) {
          const std::int64_t n = element_count(shape);
          std::vector<std::int32_t> c(static_cast<std::size_t>(n));
          for (auto& v : c) v = (rng() % 4 == 0) ? wide(rng) : narrow(rng);
          RequantizeDesc d{shape, {}, axis, t, random_zero_point(rng, t), mode};
          const std::int64_t count = axis < 0 ? 1 : shape[static_cast<std::size_t>(axis)];
          for (std::int64_t i = 0; i < count; ++i) d.multipliers.push_back(mult(rng));
          if (axis < 0) d.axis = 0;
          std::vector<std::uint8_t> want(static_cast<std::size_t>(n)), got(want.size(), 0xA5);
          reference::requantize(d, c.data(), want.data());
          ops.requantize(d, c.data(), got.data());
          EXPECT_EQ(got, want) << to_string(shape) << " axis " << axis << " " << name(t)
                               << (mode == RequantMode::fixed_point ? " fixed" : " float");
          EXPECT_EQ(own_kernel(ops, {OpKind::requantize, d}),
                    mode == RequantMode::fixed_point ? "reference" : "q8_requantize__avx2");
        }
}

TEST_F(CpuX86Quantize, DynamicQuantizeMatchesReference) {
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *loaded_.ops;
  std::uniform_real_distribution<float> u(-3.0f, 5.0f);
  for (std::int64_t n : {1, 6, 31, 1000, 70001}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = u(rng);
    if (n > 3) x[2] = std::numeric_limits<float>::quiet_NaN();
    const DynamicQuantizeDesc d{{n}};
    std::vector<std::uint8_t> want(x.size()), got(x.size(), 0xA5);
    const QuantizationParams pw = reference::dynamic_quantize_linear(d, x.data(), want.data());
    const QuantizationParams pg = ops.dynamic_quantize_linear(d, x.data(), got.data());
    EXPECT_EQ(pg, pw) << n;
    EXPECT_EQ(got, want) << n;
    EXPECT_EQ(own_kernel(ops, {OpKind::dynamic_quantize_linear, d}), "qu8_dynamic_quantize__avx2");
  }
  // The ONNX example of DESIGN.md.
  const std::vector<float> x = {0.0f, 2.0f, -3.0f, -2.5f, 1.34f, 0.5f};
  std::vector<std::uint8_t> y(6);
  const QuantizationParams p = ops.dynamic_quantize_linear({{6}}, x.data(), y.data());
  EXPECT_EQ(p.zero_point(), 153);
  EXPECT_EQ(y, (std::vector<std::uint8_t>{153, 255, 0, 26, 221, 179}));
  // An infinite input is an error, as in the reference.
  std::vector<float> bad(40, 1.0f);
  bad[33] = std::numeric_limits<float>::infinity();
  std::vector<std::uint8_t> out(40);
  EXPECT_THROW(ops.dynamic_quantize_linear({{40}}, bad.data(), out.data()), Error);
}

}  // namespace
}  // namespace qforge::cpu_x86_test
