// The shapes a candidate is verified on before it is timed. Small first (cheap to check against
// the reference), larger when a plugin refuses the small ones (tile-size constraints, a kernel
// that only runs from some M up), and the real shape last when it is small enough to check.
#include <algorithm>
#include <cmath>
#include <variant>

#include "accelerator/operands.h"
#include "qforge/checked_size.h"
#include "qforge/shape.h"

namespace qforge::accel {
namespace {

// Per level: caps on outer dims, on the last (contiguous / K) dim, on M and on N.
struct Caps {
  std::int64_t outer, last, m, n;
};

Caps caps_for(int level, std::int64_t block) {
  // Block-wise schemes get a few whole blocks plus a partial one along the blocked axis.
  if (level == 0) return {3, block > 0 ? 2 * block + 5 : 37, 5, 7};
  return {17, block > 0 ? 4 * block + 9 : 263, 33, 67};
}

// Work limits for verifying the real shape against the plain-loop reference.
constexpr std::int64_t kMaxRealElements = std::int64_t{1} << 22;
constexpr std::int64_t kMaxRealMacs = std::int64_t{1} << 25;

std::int64_t cap(std::int64_t d, std::int64_t c) {
  return std::max<std::int64_t>(1, std::min(d, c));
}

std::int64_t block_of(const QuantizationParams& p) {
  return p.scheme().granularity == Granularity::block ? p.scheme().block_size : 0;
}

Shape shrink(const Shape& s, const Caps& c) {
  Shape out = s;
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = cap(out[i], i + 1 == out.size() ? c.last : c.outer);
  return out;
}

float abs_max_scale(const QuantizationParams& p) {
  float m = 0;
  for (float s : p.scales()) m = std::max(m, s);
  return m;
}

// Fewer images, groups, channels per group and output positions; the kernel, strides,
// dilations, pads, layout and the depthwise structure stay as they are.
OpDesc shrink_conv(OpKind op, const ConvDesc& d, int level, Rng& rng) {
  const std::int64_t n_cap = level == 0 ? 1 : 2, groups_cap = level == 0 ? 2 : 4;
  const std::int64_t per_group_cap = level == 0 ? 3 : 8, extra = level == 0 ? 2 : 9;
  ConvDesc p = d;
  const std::int64_t groups = std::max<std::int64_t>(d.groups, 1);
  p.n = std::min(d.n, n_cap);
  p.groups = std::min(groups, groups_cap);
  p.c = p.groups * std::min(d.c / groups, per_group_cap);
  p.out_channels = p.groups * std::min(d.out_channels / groups, per_group_cap);
  // Enough rows and columns for the dilated kernel plus a few strides: every tap is exercised.
  p.h = std::min(d.h, (d.kernel_h - 1) * d.dilation_h + 1 + extra * d.stride_h);
  p.w = std::min(d.w, (d.kernel_w - 1) * d.dilation_w + 1 + extra * d.stride_w);
  p.x_params = random_params(rng, d.x_params.dtype(), d.x_params.scheme(), p.x_shape());
  p.w_params = random_params(rng, d.w_params.dtype(), d.w_params.scheme(), p.w_shape());
  if (d.y_params) {
    // As for qlinear_matmul: about the spread of the accumulator over the range's half width.
    const double spread = std::sqrt(static_cast<double>(std::max<std::int64_t>(p.reduction(), 1))) *
                          40.0 * 40.0 * abs_max_scale(p.x_params) * abs_max_scale(p.w_params);
    const float sy = static_cast<float>(spread / 64.0);
    const DType yt = d.y_params->dtype();
    p.y_params =
        d.y_params->scheme().mapping == Mapping::affine
            ? QuantizationParams::per_tensor_affine(yt, sy,
                                                    std::uniform_int_distribution<std::int32_t>(
                                                        traits(yt).qmin, traits(yt).qmax)(rng))
            : QuantizationParams(yt, d.y_params->scheme(), {sy});
  }
  return OpDesc{op, p};
}

}  // namespace

std::optional<OpDesc> probe_desc(const OpDesc& real, int level, Rng& rng) {
  if (level >= 2) {
    // The real descriptor with its own params: only when the reference can check it quickly.
    const IoLayout l = io_layout(real);
    std::int64_t work = 0;
    // Multiply-adds: M * N * K can exceed int64 even for a valid descriptor.
    const auto macs = [](std::int64_t m, std::int64_t n, std::int64_t k) {
      return saturating_mul(saturating_mul(m, n), std::max<std::int64_t>(k, 1));
    };
    if (const auto* d = std::get_if<MatmulDesc>(&real.desc)) work = macs(d->m, d->n, d->k);
    else if (const auto* d = std::get_if<LinearDesc>(&real.desc)) work = macs(d->m, d->n, d->k);
    else if (const auto* d = std::get_if<ConvDesc>(&real.desc))
      work = macs(saturating_mul(d->n, d->out_channels), saturating_mul(d->out_h(), d->out_w()),
                  d->reduction());
    else work = static_cast<std::int64_t>(l.inputs.empty() ? 0 : l.inputs[0].count);
    const std::int64_t limit = std::holds_alternative<MatmulDesc>(real.desc) ||
                                       std::holds_alternative<LinearDesc>(real.desc) ||
                                       std::holds_alternative<ConvDesc>(real.desc)
                                   ? kMaxRealMacs
                                   : kMaxRealElements;
    if (work > limit) return std::nullopt;
    return real;
  }
  switch (real.op) {
    case OpKind::quantize:
    case OpKind::dequantize: {
      const auto& d = std::get<QuantizeDesc>(real.desc);
      QuantizeDesc p = d;
      p.shape = shrink(d.shape, caps_for(level, block_of(d.params)));
      p.params = random_params(rng, d.params.dtype(), d.params.scheme(), p.shape);
      return OpDesc{real.op, p};
    }
    case OpKind::requantize: {
      const auto& d = std::get<RequantizeDesc>(real.desc);
      RequantizeDesc p = d;
      p.shape = shrink(d.shape, caps_for(level, 0));
      std::size_t count = 1;
      if (d.multipliers.size() != 1) {
        const int rank = static_cast<int>(p.shape.size());
        const int axis = d.axis < 0 ? d.axis + rank : d.axis;
        count = axis >= 0 && axis < rank ? static_cast<std::size_t>(p.shape[axis]) : 1;
      }
      p.multipliers.resize(count);
      for (auto& m : p.multipliers)
        m = static_cast<float>(std::exp2(std::uniform_real_distribution<double>(-14.0, -2.0)(rng)));
      const auto& tr = traits(d.out_dtype);
      p.out_zero_point = static_cast<std::int32_t>(
          std::uniform_int_distribution<std::int32_t>(tr.qmin, tr.qmax)(rng));
      return OpDesc{real.op, p};
    }
    case OpKind::matmul_integer:
    case OpKind::matmul_dequant:
    case OpKind::qlinear_matmul:
    case OpKind::matmul_weight_only: {
      const auto& d = std::get<MatmulDesc>(real.desc);
      const Caps c = caps_for(level, std::max(block_of(d.a), block_of(d.b)));
      MatmulDesc p = d;
      p.m = cap(d.m, c.m);
      p.n = cap(d.n, c.n);
      p.k = cap(d.k, c.last);
      p.a = random_params(rng, d.a.dtype(), d.a.scheme(), p.a_shape());
      p.b = random_params(rng, d.b.dtype(), d.b.scheme(), p.b_shape());
      if (d.y) {
        // An output scale that keeps most results inside the code range: about the spread of
        // C (sqrt(K) products of a few dozen codes each) over the range's half width.
        const double spread = std::sqrt(static_cast<double>(p.k)) * 40.0 * 40.0 *
                              abs_max_scale(p.a) * abs_max_scale(p.b);
        const float sy = static_cast<float>(spread / 64.0);
        const DType yt = d.y->dtype();
        p.y =
            d.y->scheme().mapping == Mapping::affine
                ? QuantizationParams::per_tensor_affine(yt, sy,
                                                        std::uniform_int_distribution<std::int32_t>(
                                                            traits(yt).qmin, traits(yt).qmax)(rng))
                : QuantizationParams(yt, d.y->scheme(), {sy});
      }
      return OpDesc{real.op, p};
    }
    case OpKind::dynamic_quantize_linear: {
      const auto& d = std::get<DynamicQuantizeDesc>(real.desc);
      return OpDesc{real.op, DynamicQuantizeDesc{shrink(d.shape, caps_for(level, 0))}};
    }
    case OpKind::linear_forward:
    case OpKind::linear_backward: {
      const auto& d = std::get<LinearDesc>(real.desc);
      const Caps c = caps_for(level, 0);
      LinearDesc p = d;
      p.m = cap(d.m, c.m);
      p.n = cap(d.n, c.n);
      p.k = cap(d.k, c.last);
      p.w = random_params(rng, d.w.dtype(), d.w.scheme(), {p.n, p.k});
      return OpDesc{real.op, p};
    }
    case OpKind::conv_integer:
    case OpKind::qlinear_conv:
    case OpKind::conv_dequant:
      return shrink_conv(real.op, std::get<ConvDesc>(real.desc), level, rng);
  }
  return std::nullopt;
}

}  // namespace qforge::accel
