// ONNX ConvInteger and QLinearConv, and convolution with fused dequantization, exact:
//   acc[n, o, oh, ow] = sum over ci < C / groups, kh < KH, kw < KW of
//                       (X[n, g * C / groups + ci, ih, iw] - zx) * (W[o, ci, kh, kw] - zw[o])
//   with g = o / (O / groups), ih = oh * stride_h - pad_top + kh * dilation_h (likewise iw);
//   positions outside the input contribute 0.
//   conv_integer:  Y = acc (int32)
//   qlinear_conv:  Y = clamp(requantize(acc + bias[o], (sx * sw[o]) / sy, zy), lo, hi)
//   conv_dequant:  Y = clamp((float(acc + bias_i32[o]) * sx) * sw[o] + bias_f32[o])
//   qlinear_conv_16x8: Y = clamp(MultiplyByQuantizedMultiplier_s64(acc + bias_i64[o]), lo, hi)
// The sums run in int64; acc (and acc + an int32 bias) must fit int32, as in every backend that
// accumulates in int32, or the op throws ErrorCode::overflow naming the position.
#include <limits>

#include "qforge/reference.h"
#include "qforge/reference_16x8.h"
#include "reference/detail.h"

namespace qforge::reference {
namespace {

struct Geometry {
  std::int64_t n, c, h, w, o, oh, ow, kh, kw, cg, og;
  explicit Geometry(const ConvDesc& d)
      : n(d.n),
        c(d.c),
        h(d.h),
        w(d.w),
        o(d.out_channels),
        oh(d.out_h()),
        ow(d.out_w()),
        kh(d.kernel_h),
        kw(d.kernel_w),
        cg(d.c / d.groups),
        og(d.out_channels / d.groups) {}
  std::int64_t x_count() const { return n * c * h * w; }
  std::int64_t y_count() const { return n * o * oh * ow; }
};

std::size_t w_pair(const ConvDesc& d, std::int64_t o) {
  return d.w_params.scheme().granularity == Granularity::per_tensor ? 0
                                                                    : static_cast<std::size_t>(o);
}

// Index of Y[n, o, oh, ow] in the descriptor's layout.
std::int64_t y_index(const ConvDesc& d, const Geometry& g, std::int64_t n, std::int64_t o,
                     std::int64_t oh, std::int64_t ow) {
  return d.layout == ConvLayout::nchw ? ((n * g.o + o) * g.oh + oh) * g.ow + ow
                                      : ((n * g.oh + oh) * g.ow + ow) * g.o + o;
}

// The exact sums, one per output element in Y's layout.
std::vector<std::int64_t> conv_sums(const ConvDesc& d, const Geometry& g, const void* x,
                                    const void* w) {
  const std::int32_t zx = d.x_params.zero_point();
  // X centered, always as [N, C, H, W], so the loop below reads one layout.
  std::vector<std::int32_t> xc(static_cast<std::size_t>(g.x_count()));
  const bool nchw = d.layout == ConvLayout::nchw;
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t ci = 0; ci < g.c; ++ci)
      for (std::int64_t ih = 0; ih < g.h; ++ih)
        for (std::int64_t iw = 0; iw < g.w; ++iw) {
          const std::int64_t src = nchw ? ((n * g.c + ci) * g.h + ih) * g.w + iw
                                        : ((n * g.h + ih) * g.w + iw) * g.c + ci;
          xc[static_cast<std::size_t>(((n * g.c + ci) * g.h + ih) * g.w + iw)] =
              load_element(d.x_params.dtype(), x, static_cast<std::size_t>(src)) - zx;
        }
  const std::int64_t per_o = g.cg * g.kh * g.kw;
  std::vector<std::int32_t> wc(static_cast<std::size_t>(g.o * per_o));
  for (std::int64_t o = 0; o < g.o; ++o) {
    const std::int32_t zw = d.w_params.zero_point(w_pair(d, o));
    for (std::int64_t i = 0; i < per_o; ++i) {
      const auto idx = static_cast<std::size_t>(o * per_o + i);
      wc[idx] = load_element(d.w_params.dtype(), w, idx) - zw;
    }
  }
  std::vector<std::int64_t> acc(static_cast<std::size_t>(g.y_count()), 0);
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.o; ++o) {
      const std::int64_t c0 = (o / g.og) * g.cg;
      for (std::int64_t oh = 0; oh < g.oh; ++oh)
        for (std::int64_t ow = 0; ow < g.ow; ++ow) {
          std::int64_t sum = 0;
          for (std::int64_t ci = 0; ci < g.cg; ++ci)
            for (std::int64_t kh = 0; kh < g.kh; ++kh) {
              const std::int64_t ih = oh * d.stride_h - d.pad_top + kh * d.dilation_h;
              if (ih < 0 || ih >= g.h) continue;
              for (std::int64_t kw = 0; kw < g.kw; ++kw) {
                const std::int64_t iw = ow * d.stride_w - d.pad_left + kw * d.dilation_w;
                if (iw < 0 || iw >= g.w) continue;
                const std::int64_t xv =
                    xc[static_cast<std::size_t>(((n * g.c + c0 + ci) * g.h + ih) * g.w + iw)];
                const std::int64_t wv =
                    wc[static_cast<std::size_t>(((o * g.cg + ci) * g.kh + kh) * g.kw + kw)];
                sum += xv * wv;
              }
            }
          acc[static_cast<std::size_t>(y_index(d, g, n, o, oh, ow))] = sum;
        }
    }
  return acc;
}

std::int32_t checked(const std::string& op, std::int64_t v, std::int64_t n, std::int64_t o,
                     std::int64_t oh, std::int64_t ow, const char* what) {
  if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    detail::fail(ErrorCode::overflow, op,
                 std::string(what) + " at (n, o, oh, ow) = (" + std::to_string(n) + ", " +
                     std::to_string(o) + ", " + std::to_string(oh) + ", " + std::to_string(ow) +
                     ") = " + std::to_string(v) +
                     " does not fit int32; expected a result in [-2147483648, 2147483647] "
                     "(reduce C / groups * KH * KW or the operand ranges; int32_safe_reduction "
                     "gives a safe length)");
  return static_cast<std::int32_t>(v);
}

// Calls f(n, o, oh, ow, index) for every output element.
template <class F>
void for_each_output(const ConvDesc& d, const Geometry& g, F&& f) {
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.o; ++o)
      for (std::int64_t oh = 0; oh < g.oh; ++oh)
        for (std::int64_t ow = 0; ow < g.ow; ++ow)
          f(n, o, oh, ow, static_cast<std::size_t>(y_index(d, g, n, o, oh, ow)));
}

void require_arrays(const std::string& op, const ConvDesc& d, const Geometry& g, const void* x,
                    const void* w, const void* bias, const void* y) {
  detail::require_data(op, "x", x, g.x_count());
  detail::require_data(op, "w", w, g.o * g.cg * g.kh * g.kw);
  detail::require_data(op, "y", y, g.y_count());
  if (d.bias != ConvBias::none) detail::require_data(op, "bias (desc.bias is set)", bias, g.o);
}

}  // namespace

void conv_integer(const ConvDesc& desc, const void* x, const void* w, std::int32_t* y) {
  const std::string op = "conv_integer";
  detail::validate_conv(op, OpKind::conv_integer, desc);
  const Geometry g(desc);  // validate_conv bounded every operand: these products are exact
  require_arrays(op, desc, g, x, w, nullptr, y);
  const auto acc = conv_sums(desc, g, x, w);
  for_each_output(desc, g, [&](auto n, auto o, auto oh, auto ow, std::size_t i) {
    y[i] = checked(op, acc[i], n, o, oh, ow, "Y");
  });
}

void qlinear_conv(const ConvDesc& desc, const void* x, const void* w, const std::int32_t* bias,
                  void* y) {
  const std::string op = "qlinear_conv";
  detail::validate_conv(op, OpKind::qlinear_conv, desc);
  const Geometry g(desc);
  require_arrays(op, desc, g, x, w, bias, y);
  const QuantizationParams& yp = *desc.y_params;
  const float sx = desc.x_params.scale(), sy = yp.scale();
  // Plain variables, not a structured binding: lambdas may not capture bindings before C++20's
  // P1091, which clang 14 (the fuzz build) lacks.
  const auto clamp = detail::conv_output_clamp(desc);
  const std::int32_t lo = clamp.first, hi = clamp.second;
  std::vector<float> multipliers(static_cast<std::size_t>(g.o));
  for (std::int64_t o = 0; o < g.o; ++o)
    multipliers[static_cast<std::size_t>(o)] =
        (sx * desc.w_params.scale(w_pair(desc, o))) / sy;  // float32, in this order
  const auto acc = conv_sums(desc, g, x, w);
  for_each_output(desc, g, [&](auto n, auto o, auto oh, auto ow, std::size_t i) {
    const std::int64_t b = desc.bias == ConvBias::int32 ? bias[o] : 0;
    const std::int32_t c = checked(op, acc[i] + b, n, o, oh, ow, "accumulator plus bias");
    std::int32_t q = requantize_value(c, multipliers[static_cast<std::size_t>(o)],
                                      desc.requant_mode, yp.zero_point(), yp.qmin(), yp.qmax());
    q = q < lo ? lo : q > hi ? hi : q;
    store_element(yp.dtype(), y, i, q);
  });
}

void qlinear_conv_16x8(const ConvDesc& desc, const void* x, const void* w, const std::int64_t* bias,
                       void* y) {
  const std::string op = "qlinear_conv_16x8";
  detail::validate_conv_16x8(op, desc);
  const Geometry g(desc);
  require_arrays(op, desc, g, x, w, nullptr, y);
  const QuantizationParams& yp = *desc.y_params;
  // The full int16 range, as TFLite's int16 activations (the symmetric scale maps +-max to
  // +-32767; -32768 stays reachable, as there).
  const auto clamp = detail::conv_output_clamp(desc, -32768, 32767);
  const std::int64_t lo = clamp.first, hi = clamp.second;
  std::vector<FixedPointMultiplier> multipliers(static_cast<std::size_t>(g.o));
  for (std::int64_t o = 0; o < g.o; ++o)
    multipliers[static_cast<std::size_t>(o)] =
        multiplier_16x8(desc.x_params.scale(), desc.w_params.scale(w_pair(desc, o)), yp.scale(), op,
                        "output channel " + std::to_string(o));
  // |acc| <= 32768 * 127 * C / groups * KH * KW: exact in int64 for any reduction that fits
  // memory; the bound that matters is the 2^47 of the requantization, checked per element.
  const auto acc = conv_sums(desc, g, x, w);
  constexpr std::int64_t kLimit = std::int64_t{1} << 47;
  for_each_output(desc, g, [&](auto n, auto o, auto oh, auto ow, std::size_t i) {
    const std::int64_t c = acc[i] + (bias ? bias[o] : 0);
    if (c < -kLimit || c >= kLimit)
      detail::fail(ErrorCode::overflow, op,
                   "accumulator plus bias at (n, o, oh, ow) = (" + std::to_string(n) + ", " +
                       std::to_string(o) + ", " + std::to_string(oh) + ", " + std::to_string(ow) +
                       ") = " + std::to_string(c) +
                       "; expected a value in [-2^47, 2^47) (TFLite's 16x8 requantization)");
    std::int64_t q =
        multiply_by_quantized_multiplier_s64(c, multipliers[static_cast<std::size_t>(o)]);
    q = q < lo ? lo : q > hi ? hi : q;
    store_element(DType::int16, y, i, static_cast<std::int32_t>(q));
  });
}

void check_conv_16x8(const ConvDesc& desc) {
  detail::validate_conv_16x8("qlinear_conv_16x8", desc);
}

void conv_dequant(const ConvDesc& desc, const void* x, const void* w, const void* bias, float* y) {
  const std::string op = "conv_dequant";
  detail::validate_conv(op, OpKind::conv_dequant, desc);
  const Geometry g(desc);
  require_arrays(op, desc, g, x, w, bias, y);
  const float sx = desc.x_params.scale();
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (desc.activation == ConvActivation::relu) lo = 0.0f;
  if (desc.activation == ConvActivation::relu6) lo = 0.0f, hi = 6.0f;
  if (desc.activation == ConvActivation::clamp) lo = desc.clamp_min, hi = desc.clamp_max;
  const auto acc = conv_sums(desc, g, x, w);
  for_each_output(desc, g, [&](auto n, auto o, auto oh, auto ow, std::size_t i) {
    const std::int64_t bi =
        desc.bias == ConvBias::int32 ? static_cast<const std::int32_t*>(bias)[o] : 0;
    const std::int32_t c =
        checked(op, acc[i] + bi, n, o, oh, ow,
                desc.bias == ConvBias::int32 ? "accumulator plus bias" : "accumulator");
    float v = (static_cast<float>(c) * sx) * desc.w_params.scale(w_pair(desc, o));
    if (desc.bias == ConvBias::f32) v = v + static_cast<const float*>(bias)[o];
    y[i] = v < lo ? lo : v > hi ? hi : v;
  });
}

void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
          void* y) {
  switch (op) {
    case OpKind::conv_integer: return conv_integer(desc, x, w, static_cast<std::int32_t*>(y));
    case OpKind::qlinear_conv:
      return qlinear_conv(desc, x, w, static_cast<const std::int32_t*>(bias), y);
    case OpKind::conv_dequant: return conv_dequant(desc, x, w, bias, static_cast<float*>(y));
    default: break;
  }
  detail::fail(ErrorCode::invalid_argument, std::string(to_string(op)),
               "descriptor is a ConvDesc; expected the descriptor type of this op (op_desc.h)");
}

}  // namespace qforge::reference
