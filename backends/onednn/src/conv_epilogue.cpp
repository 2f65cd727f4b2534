#include "conv_epilogue.h"

#include <atomic>
#include <cstring>
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
  // Locals, not members read through `stage` or captured references: the uint8 stores below may
  // alias anything, so the compiler would reload every one of them per element.
  const std::int64_t chunks = s.chunks;
  const std::int32_t lo = stage.lo, hi = stage.hi, zy = stage.zy;
  const std::int32_t qmin = stage.qmin, qmax = stage.qmax;
  const bool y_signed = stage.y_signed, fixed = !stage.fixed.empty();
  const float sx = stage.sx, flo = stage.flo, fhi = stage.fhi;
  const float* sw = stage.sw.data();
  const float* mult = stage.mult.data();
  const reference::FixedPointMultiplier* fm = stage.fixed.data();
  const std::int32_t* zw = zps ? s.zero_points->data() : nullptr;
  std::atomic<bool> overflow{false};
  parallel_ranges(pixels, 1, threads, min_pixels(o), [&](std::int64_t p0, std::int64_t p1) {
    std::vector<std::int32_t> acc(static_cast<std::size_t>(o));
    std::vector<std::uint8_t> codes(static_cast<std::size_t>(o));
    std::vector<float> values(static_cast<std::size_t>(o));
    std::int32_t* a = acc.data();
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int32_t* t = s.sums + p * width;
      if (chunks == 1 && !zw) {
        std::memcpy(a, t, static_cast<std::size_t>(o) * sizeof(std::int32_t));
      } else {
        // Unsigned arithmetic: well defined modulo 2^32.
        for (std::int64_t g = 0; g < groups; ++g) {
          const std::uint32_t window =
              zw ? static_cast<std::uint32_t>(s.windows[p * groups + g]) : 0u;
          for (std::int64_t ol = 0; ol < og; ++ol) {
            const std::int64_t oc = g * og + ol;
            std::uint32_t v = 0;
            for (std::int64_t j = 0; j < chunks; ++j)
              v += static_cast<std::uint32_t>(t[(g * chunks + j) * og + ol]);
            if (zw) v -= static_cast<std::uint32_t>(zw[oc]) * window;
            a[oc] = static_cast<std::int32_t>(v);
          }
        }
      }
      if (bias_i32) {
        bool bad = false;
        for (std::int64_t oc = 0; oc < o; ++oc) {
          const std::int64_t v = static_cast<std::int64_t>(a[oc]) + bias_i32[oc];
          bad |= v < std::numeric_limits<std::int32_t>::min() ||
                 v > std::numeric_limits<std::int32_t>::max();
          a[oc] = static_cast<std::int32_t>(v);
        }
        if (bad) {
          overflow.store(true, std::memory_order_relaxed);
          return;
        }
      }
      const std::int64_t n = p / ohw, pix = p % ohw;
      // NCHW: channel oc of this pixel is at first + oc * ohw; NHWC: rows are contiguous.
      const std::int64_t first = nchw ? n * o * ohw + pix : p * o;
      switch (op) {
        case OpKind::conv_integer: {
          auto* out = static_cast<std::int32_t*>(y) + first;
          if (nchw) {
            for (std::int64_t oc = 0; oc < o; ++oc) out[oc * ohw] = a[oc];
          } else {
            std::memcpy(out, a, static_cast<std::size_t>(o) * sizeof(std::int32_t));
          }
          break;
        }
        case OpKind::qlinear_conv: {
          std::uint8_t* row = nchw ? codes.data() : static_cast<std::uint8_t*>(y) + first;
          if (fixed) {
            for (std::int64_t oc = 0; oc < o; ++oc) {
              std::int64_t q = static_cast<std::int64_t>(
                                   reference::multiply_by_quantized_multiplier(a[oc], fm[oc])) +
                               zy;
              q = q < qmin ? qmin : q > qmax ? qmax : q;
              q = q < lo ? lo : q > hi ? hi : q;
              row[oc] = static_cast<std::uint8_t>(q);
            }
          } else if (y_signed) {
            auto* r = reinterpret_cast<std::int8_t*>(row);
            requantize_s8(a, mult, r, o, zy, qmin, qmax);
            const auto l = static_cast<std::int8_t>(lo), h = static_cast<std::int8_t>(hi);
            for (std::int64_t oc = 0; oc < o; ++oc) r[oc] = r[oc] < l ? l : r[oc] > h ? h : r[oc];
          } else {
            requantize_u8(a, mult, row, o, zy, qmin, qmax);
            const auto l = static_cast<std::uint8_t>(lo), h = static_cast<std::uint8_t>(hi);
            for (std::int64_t oc = 0; oc < o; ++oc)
              row[oc] = row[oc] < l ? l : row[oc] > h ? h : row[oc];
          }
          if (nchw) {
            auto* out = static_cast<std::uint8_t*>(y) + first;
            for (std::int64_t oc = 0; oc < o; ++oc) out[oc * ohw] = row[oc];
          }
          break;
        }
        case OpKind::conv_dequant: {
          float* v = nchw ? values.data() : static_cast<float*>(y) + first;
          for (std::int64_t oc = 0; oc < o; ++oc) v[oc] = (static_cast<float>(a[oc]) * sx) * sw[oc];
          if (bias_f32)
            for (std::int64_t oc = 0; oc < o; ++oc) v[oc] = v[oc] + bias_f32[oc];
          for (std::int64_t oc = 0; oc < o; ++oc)
            v[oc] = v[oc] < flo ? flo : v[oc] > fhi ? fhi : v[oc];
          if (nchw) {
            auto* out = static_cast<float*>(y) + first;
            for (std::int64_t oc = 0; oc < o; ++oc) out[oc * ohw] = v[oc];
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
