#include "conv_epilogue.h"

#include <atomic>
#include <limits>

#include "qforge/reference.h"
#include "threads.h"
#include "vector_loops.h"

namespace qforge::onednn {
namespace {

float w_scale(const ConvDesc& d, std::int64_t o) {
  return d.w_params.scheme().granularity == Granularity::per_tensor
             ? d.w_params.scale(0)
             : d.w_params.scale(static_cast<std::size_t>(o));
}

// Output pixels per thread so that each gets at least ~16K outputs.
std::int64_t min_pixels(std::int64_t o) {
  return std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, o));
}

// The output stage's per-channel constants.
struct Stage {
  OpKind op;
  std::int64_t o;
  float sx = 1.0f;
  std::vector<float> sw;
  // qlinear_conv
  std::vector<float> mult;
  std::vector<reference::FixedPointMultiplier> fixed;
  std::int32_t zy = 0, qmin = 0, qmax = 0, lo = 0, hi = 0;
  bool y_signed = false;
  // conv_dequant
  float flo = -std::numeric_limits<float>::infinity();
  float fhi = std::numeric_limits<float>::infinity();

  Stage(OpKind kind, const ConvDesc& d) : op(kind), o(d.out_channels) {
    sx = d.x_params.scale();
    sw.resize(static_cast<std::size_t>(o));
    for (std::int64_t i = 0; i < o; ++i) sw[static_cast<std::size_t>(i)] = w_scale(d, i);
    if (op == OpKind::qlinear_conv) {
      const QuantizationParams& yp = *d.y_params;
      const float sy = yp.scale();
      zy = yp.zero_point();
      qmin = yp.qmin();
      qmax = yp.qmax();
      y_signed = yp.dtype() == DType::int8;
      mult.resize(static_cast<std::size_t>(o));
      for (std::size_t i = 0; i < mult.size(); ++i) mult[i] = (sx * sw[i]) / sy;  // this order
      if (d.requant_mode == RequantMode::fixed_point)
        for (const float m : mult) fixed.push_back(reference::quantize_multiplier(m));
      // The fused activation's bounds in output codes (the reference's conv_output_clamp).
      auto q = [&](float v) { return reference::quantize_value(v, sy, zy, qmin, qmax); };
      lo = qmin;
      hi = qmax;
      if (d.activation == ConvActivation::relu) lo = q(0.0f);
      if (d.activation == ConvActivation::relu6) lo = q(0.0f), hi = q(6.0f);
      if (d.activation == ConvActivation::clamp) lo = q(d.clamp_min), hi = q(d.clamp_max);
    }
    if (op == OpKind::conv_dequant) {
      if (d.activation == ConvActivation::relu) flo = 0.0f;
      if (d.activation == ConvActivation::relu6) flo = 0.0f, fhi = 6.0f;
      if (d.activation == ConvActivation::clamp) flo = d.clamp_min, fhi = d.clamp_max;
    }
  }
};

}  // namespace

std::vector<std::int64_t> window_sums(const ConvDesc& d, const void* x_nhwc, int threads) {
  const std::int64_t groups = d.groups, cg = d.c / d.groups, oh = d.out_h(), ow = d.out_w();
  const std::int64_t pixels_in = d.n * d.h * d.w;
  const bool u8 = d.x_params.dtype() == DType::uint8;
  // Per input pixel and group: the sum of its channels' codes.
  std::vector<std::int64_t> per_pixel(static_cast<std::size_t>(pixels_in * groups), 0);
  parallel_ranges(pixels_in, 1, threads, 1024, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p)
      for (std::int64_t g = 0; g < groups; ++g) {
        std::int64_t s = 0;
        const std::int64_t base = p * d.c + g * cg;
        if (u8) {
          const auto* x = static_cast<const std::uint8_t*>(x_nhwc) + base;
          for (std::int64_t c = 0; c < cg; ++c) s += x[c];
        } else {
          const auto* x = static_cast<const std::int8_t*>(x_nhwc) + base;
          for (std::int64_t c = 0; c < cg; ++c) s += x[c];
        }
        per_pixel[static_cast<std::size_t>(p * groups + g)] = s;
      }
  });
  const std::int64_t zx_channels = static_cast<std::int64_t>(d.x_params.zero_point()) * cg;
  const std::int64_t pixels_out = d.n * oh * ow;
  std::vector<std::int64_t> out(static_cast<std::size_t>(pixels_out * groups), 0);
  parallel_ranges(pixels_out, 1, threads, 256, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int64_t n = p / (oh * ow), r = p % (oh * ow), y = r / ow, x = r % ow;
      std::int64_t* o = out.data() + p * groups;
      for (std::int64_t kh = 0; kh < d.kernel_h; ++kh) {
        const std::int64_t ih = y * d.stride_h - d.pad_top + kh * d.dilation_h;
        if (ih < 0 || ih >= d.h) continue;
        for (std::int64_t kw = 0; kw < d.kernel_w; ++kw) {
          const std::int64_t iw = x * d.stride_w - d.pad_left + kw * d.dilation_w;
          if (iw < 0 || iw >= d.w) continue;
          const std::int64_t* in = per_pixel.data() + ((n * d.h + ih) * d.w + iw) * groups;
          for (std::int64_t g = 0; g < groups; ++g) o[g] += in[g] - zx_channels;
        }
      }
    }
  });
  return out;
}

bool conv_epilogue(OpKind op, const ConvDesc& d, const ConvSums& s, const void* bias, void* y,
                   int threads) {
  const Stage stage(op, d);
  const std::int64_t o = d.out_channels, groups = d.groups, og = o / groups;
  const std::int64_t ohw = d.out_h() * d.out_w(), pixels = d.n * ohw;
  const std::int64_t width = groups * s.chunks * og;  // channels of oneDNN's output
  const bool nchw = d.layout == ConvLayout::nchw;
  const bool zps = s.zero_points && !s.zero_points->empty();
  const auto* bias_i32 =
      d.bias == ConvBias::int32 ? static_cast<const std::int32_t*>(bias) : nullptr;
  const auto* bias_f32 = d.bias == ConvBias::f32 ? static_cast<const float*>(bias) : nullptr;
  std::atomic<bool> overflow{false};
  parallel_ranges(pixels, 1, threads, min_pixels(o), [&](std::int64_t p0, std::int64_t p1) {
    std::vector<std::int32_t> acc(static_cast<std::size_t>(o));
    std::vector<std::uint8_t> codes(static_cast<std::size_t>(o));
    std::vector<float> values(static_cast<std::size_t>(o));
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int32_t* t = s.sums + p * width;
      // Unsigned arithmetic: well defined modulo 2^32.
      for (std::int64_t g = 0; g < groups; ++g)
        for (std::int64_t ol = 0; ol < og; ++ol) {
          const std::int64_t oc = g * og + ol;
          std::uint32_t v = 0;
          for (std::int64_t j = 0; j < s.chunks; ++j)
            v += static_cast<std::uint32_t>(t[(g * s.chunks + j) * og + ol]);
          if (zps)
            v -= static_cast<std::uint32_t>((*s.zero_points)[static_cast<std::size_t>(oc)]) *
                 static_cast<std::uint32_t>(s.windows[p * groups + g]);
          acc[static_cast<std::size_t>(oc)] = static_cast<std::int32_t>(v);
        }
      if (bias_i32) {
        bool bad = false;
        for (std::int64_t oc = 0; oc < o; ++oc) {
          const std::int64_t v =
              static_cast<std::int64_t>(acc[static_cast<std::size_t>(oc)]) + bias_i32[oc];
          bad |= v < std::numeric_limits<std::int32_t>::min() ||
                 v > std::numeric_limits<std::int32_t>::max();
          acc[static_cast<std::size_t>(oc)] = static_cast<std::int32_t>(v);
        }
        if (bad) {
          overflow.store(true, std::memory_order_relaxed);
          return;
        }
      }
      const std::int64_t n = p / ohw, pix = p % ohw;
      // Element oc of this pixel's output, in the descriptor's layout.
      auto at = [&](std::int64_t oc) { return nchw ? (n * o + oc) * ohw + pix : p * o + oc; };
      switch (op) {
        case OpKind::conv_integer: {
          auto* out = static_cast<std::int32_t*>(y);
          for (std::int64_t oc = 0; oc < o; ++oc) out[at(oc)] = acc[static_cast<std::size_t>(oc)];
          break;
        }
        case OpKind::qlinear_conv: {
          if (!stage.fixed.empty()) {
            for (std::int64_t oc = 0; oc < o; ++oc) {
              const auto i = static_cast<std::size_t>(oc);
              std::int64_t q =
                  static_cast<std::int64_t>(
                      reference::multiply_by_quantized_multiplier(acc[i], stage.fixed[i])) +
                  stage.zy;
              q = q < stage.qmin ? stage.qmin : q > stage.qmax ? stage.qmax : q;
              codes[i] = static_cast<std::uint8_t>(q);
            }
          } else if (stage.y_signed) {
            requantize_s8(acc.data(), stage.mult.data(),
                          reinterpret_cast<std::int8_t*>(codes.data()), o, stage.zy, stage.qmin,
                          stage.qmax);
          } else {
            requantize_u8(acc.data(), stage.mult.data(), codes.data(), o, stage.zy, stage.qmin,
                          stage.qmax);
          }
          auto* out = static_cast<std::uint8_t*>(y);
          for (std::int64_t oc = 0; oc < o; ++oc) {
            const std::uint8_t c = codes[static_cast<std::size_t>(oc)];
            std::int32_t q = stage.y_signed ? static_cast<std::int8_t>(c) : c;
            q = q < stage.lo ? stage.lo : q > stage.hi ? stage.hi : q;
            out[at(oc)] = static_cast<std::uint8_t>(q);
          }
          break;
        }
        case OpKind::conv_dequant: {
          auto* out = static_cast<float*>(y);
          for (std::int64_t oc = 0; oc < o; ++oc) {
            const auto i = static_cast<std::size_t>(oc);
            float v = (static_cast<float>(acc[i]) * stage.sx) * stage.sw[i];
            if (bias_f32) v = v + bias_f32[oc];
            out[at(oc)] = v < stage.flo ? stage.flo : v > stage.fhi ? stage.fhi : v;
          }
          break;
        }
        default: break;
      }
    }
  });
  return !overflow.load();
}

}  // namespace qforge::onednn
