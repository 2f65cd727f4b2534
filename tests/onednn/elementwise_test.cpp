// quantize, dequantize, requantize and DynamicQuantizeLinear against qforge::reference on large
// fresh random tensors (so that the vector loops, the OpenMP chunking and the packed 4-bit /
// binary byte boundaries between threads all run), with exact ties, +/-inf, NaN, huge and tiny
// values mixed in. Every kernel supports() lists is compared, so the oneDNN reorder dequantize
// and the plain-loop fallbacks are both checked bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "qforge/half.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::onednn_test {
namespace {

// Values around the quantization grid of scale s: exact ties (k + 0.5) * s, random values,
// specials.
std::vector<float> grid_values(Rng& rng, std::int64_t n, float s, std::int32_t span) {
  std::vector<float> x(static_cast<std::size_t>(n));
  std::uniform_int_distribution<std::int32_t> k(-span, span);
  std::uniform_real_distribution<float> u(-static_cast<float>(span), static_cast<float>(span));
  const float specials[] = {std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            0.0f,
                            -0.0f,
                            3.0e38f,
                            -3.0e38f,
                            1.0e-40f,
                            -1.0e-40f};
  for (std::size_t i = 0; i < x.size(); ++i) {
    switch (rng() % 8) {
      case 0: x[i] = (static_cast<float>(k(rng)) + 0.5f) * s; break;
      case 1: x[i] = specials[rng() % std::size(specials)]; break;
      default: x[i] = u(rng) * s; break;
    }
  }
  return x;
}

struct Case {
  DType dtype;
  Scheme scheme;
};

QuantizationParams params_for(Rng& rng, const Case& c, const Shape& shape) {
  std::int64_t pairs = 1;
  if (c.scheme.granularity == Granularity::per_channel) {
    const int rank = static_cast<int>(shape.size());
    pairs =
        shape[static_cast<std::size_t>(c.scheme.axis < 0 ? c.scheme.axis + rank : c.scheme.axis)];
  } else if (c.scheme.granularity == Granularity::block) {
    pairs = element_count(shape) / shape.back() *
            ((shape.back() + c.scheme.block_size - 1) / c.scheme.block_size);
  }
  std::vector<float> scales;
  std::vector<std::int32_t> zps;
  std::uniform_int_distribution<std::int32_t> z(traits(c.dtype).qmin, traits(c.dtype).qmax);
  const bool uniform_zp = rng() % 3 == 0;  // lets the reorder take per-channel/block cases
  const std::int32_t z0 = z(rng);
  for (std::int64_t i = 0; i < pairs; ++i) {
    scales.push_back(random_scale(rng));
    if (c.scheme.mapping == Mapping::affine) zps.push_back(uniform_zp ? z0 : z(rng));
  }
  return QuantizationParams(c.dtype, c.scheme, scales, zps);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const DType t :
       {DType::int8, DType::uint8, DType::int16, DType::uint16, DType::int4, DType::uint4}) {
    for (const Mapping m : {Mapping::affine, Mapping::symmetric}) {
      out.push_back({t, {m, Granularity::per_tensor}});
      out.push_back({t, {m, Granularity::per_channel, 0}});
      out.push_back({t, {m, Granularity::per_channel, -1}});
      out.push_back({t, {m, Granularity::per_channel, 1}});
      out.push_back({t, {m, Granularity::block, 0, 32}});
      out.push_back({t, {m, Granularity::block, 0, 7}});
    }
    out.push_back({t, Scheme::logarithmic()});
  }
  out.push_back({DType::binary, Scheme::per_tensor_symmetric()});
  out.push_back({DType::binary, {Mapping::symmetric, Granularity::block, 0, 5}});
  return out;
}

TEST(Elementwise, QuantizeAndDequantizeMatchTheReference) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  // [rows, cols] with an odd last axis (partial blocks, odd 4-bit counts) and enough elements to
  // spread over threads.
  const Shape shapes[] = {{3, 20001}, {129, 129}, {30001}};
  int compared = 0;
  for (const Case& c : cases()) {
    for (const Shape& shape0 : shapes) {
      Shape shape = shape0;
      if (c.scheme.granularity == Granularity::per_channel && c.scheme.axis == 1 &&
          shape.size() < 2)
        continue;
      const QuantizationParams p = params_for(rng, c, shape);
      const std::int64_t n = element_count(shape);
      SCOPED_TRACE(p.to_string() + " shape " + to_string(shape));
      for (const FloatType ft : {FloatType::f32, FloatType::f16, FloatType::bf16}) {
        if (ft != FloatType::f32 && shape != shapes[0]) continue;  // one shape is enough for them
        const QuantizeDesc d{shape, p, ft};
        const std::vector<float> xf = grid_values(rng, n, p.scale(0), traits(c.dtype).qmax);
        std::vector<std::uint8_t> x(static_cast<std::size_t>(n) *
                                    static_cast<std::size_t>(size_of(ft)));
        for (std::int64_t i = 0; i < n; ++i)
          store_float(ft, x.data(), static_cast<std::size_t>(i), xf[static_cast<std::size_t>(i)]);
        const std::size_t qbytes = storage_bytes(c.dtype, static_cast<std::size_t>(n));
        std::vector<std::uint8_t> want(qbytes), got(qbytes, 0xCD);
        reference::quantize(d, x.data(), want.data());
        ASSERT_TRUE(ops.supports({OpKind::quantize, d}).supported);
        ops.quantize(d, x.data(), got.data());
        EXPECT_TRUE(same_bytes(got.data(), want.data(), qbytes))
            << "quantize, " << name(ft) << " input";
        ++compared;
        if (ft != FloatType::f32) continue;
        std::vector<float> xw(static_cast<std::size_t>(n)), xg(static_cast<std::size_t>(n));
        reference::dequantize(d, want.data(), xw.data());
        const Support s = ops.supports({OpKind::dequantize, d});
        ASSERT_TRUE(s.supported) << s.reason;
        std::fill(xg.begin(), xg.end(), std::numeric_limits<float>::quiet_NaN());
        ops.dequantize(d, want.data(), xg.data());
        EXPECT_TRUE(same_bytes(xg.data(), xw.data(), xw.size() * 4, 4)) << "dequantize per call";
        for (const auto& kernel : s.kernels) {
          std::fill(xg.begin(), xg.end(), std::numeric_limits<float>::quiet_NaN());
          ops.plan({OpKind::dequantize, d}, PlanRequest{0, kernel, {}})
              ->run({want.data()}, {xg.data()});
          EXPECT_TRUE(same_bytes(xg.data(), xw.data(), xw.size() * 4, 4))
              << "dequantize with " << kernel;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 300);
}

TEST(Elementwise, ReorderOnlyWhereExact) {
  ONEDNN_OR_SKIP(ops);
  const auto kernels = [&](const QuantizationParams& p, const Shape& s) {
    return ops.supports({OpKind::dequantize, QuantizeDesc{s, p, FloatType::f32}}).kernels;
  };
  using V = std::vector<std::string>;
  const V both = {"loop_dequantize", "dnnl_reorder_dequantize"}, loop = {"loop_dequantize"};
  EXPECT_EQ(kernels(QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3), {10}), both);
  EXPECT_EQ(
      kernels(QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 1, {0.5f, 0.25f}),
              {3, 2}),
      both);
  // Zero points that differ per channel: oneDNN 2.6 cannot execute that reorder.
  EXPECT_EQ(kernels(QuantizationParams::per_channel(DType::uint8, Mapping::affine, 1, {0.5f, 0.25f},
                                                    {1, 2}),
                    {3, 2}),
            loop);
  // Partial last block: no whole-dimension view.
  EXPECT_EQ(kernels(QuantizationParams(DType::int8, Scheme::block_symmetric(4),
                                       std::vector<float>(6, 0.5f)),
                    {3, 6}),
            loop);
  EXPECT_EQ(kernels(QuantizationParams(DType::int8, Scheme::block_symmetric(3),
                                       std::vector<float>(6, 0.5f)),
                    {3, 6}),
            both);
  EXPECT_EQ(kernels(QuantizationParams::per_tensor_affine(DType::int16, 0.5f, 3), {10}), loop);
  EXPECT_EQ(kernels(QuantizationParams::logarithmic(DType::int8, 1.0f), {10}), loop);
  // quantize never goes through a reorder (docs/ONEDNN.md: it is not exact).
  EXPECT_EQ(ops.supports({OpKind::quantize,
                          QuantizeDesc{{10},
                                       QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3),
                                       FloatType::f32}})
                .kernels,
            V{"loop_quantize"});
}

TEST(Elementwise, RequantizeMatchesTheReference) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  const Shape shape = {37, 1031};
  const std::int64_t n = element_count(shape);
  std::vector<std::int32_t> c(static_cast<std::size_t>(n));
  std::uniform_int_distribution<std::int32_t> big(std::numeric_limits<std::int32_t>::min(),
                                                  std::numeric_limits<std::int32_t>::max());
  std::uniform_int_distribution<std::int32_t> small(-3000, 3000);
  for (auto& v : c) v = rng() % 4 == 0 ? big(rng) : small(rng);
  for (const DType out : {DType::int8, DType::uint8})
    for (const RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point})
      for (const int axis : {-2, 0, 1, 99}) {  // 99: per tensor
        RequantizeDesc d;
        d.shape = shape;
        d.out_dtype = out;
        d.mode = mode;
        d.out_zero_point = out == DType::uint8 ? 128 : -3;
        const std::int64_t count =
            axis == 99 ? 1 : shape[static_cast<std::size_t>(axis < 0 ? axis + 2 : axis)];
        d.axis = axis == 99 ? -1 : axis;
        for (std::int64_t i = 0; i < count; ++i)
          d.multipliers.push_back(i % 5 == 0   ? 0.5f
                                  : i % 5 == 1 ? 0.0f
                                               : random_scale(rng) / 16.0f);
        SCOPED_TRACE(describe({OpKind::requantize, d}));
        std::vector<std::uint8_t> want(static_cast<std::size_t>(n)),
            got(static_cast<std::size_t>(n), 0xCD);
        reference::requantize(d, c.data(), want.data());
        ops.requantize(d, c.data(), got.data());
        EXPECT_TRUE(same_bytes(got.data(), want.data(), want.size()));
      }
}

TEST(Elementwise, DynamicQuantizeLinearMatchesTheReference) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  for (const std::int64_t n :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{1000}, std::int64_t{300007}}) {
    std::uniform_real_distribution<float> u(-3.0f, 7.0f);
    std::vector<float> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = rng() % 50 == 0 ? std::numeric_limits<float>::quiet_NaN() : u(rng);
    const DynamicQuantizeDesc d{{n}};
    std::vector<std::uint8_t> want(x.size()), got(x.size(), 0xCD);
    const QuantizationParams pw = reference::dynamic_quantize_linear(d, x.data(), want.data());
    const QuantizationParams pg = ops.dynamic_quantize_linear(d, x.data(), got.data());
    EXPECT_EQ(pg, pw) << pg.to_string() << " vs " << pw.to_string();
    EXPECT_TRUE(same_bytes(got.data(), want.data(), want.size())) << "n = " << n;
  }
  // An infinite element throws, naming it.
  std::vector<float> x(100000, 1.0f);
  x[77777] = -std::numeric_limits<float>::infinity();
  std::vector<std::uint8_t> y(x.size());
  try {
    ops.dynamic_quantize_linear({{static_cast<std::int64_t>(x.size())}}, x.data(), y.data());
    ADD_FAILURE() << "an infinite input was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("x[77777]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge::onednn_test
