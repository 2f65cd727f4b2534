// conv_integer, qlinear_conv and conv_dequant: one dispatch of conv_direct.comp over the whole
// output. supports() claims only convolutions whose X, W, Y and params each fit one binding and
// whose output fits one grid, so nothing here splits; the per-output-channel zero points, scales
// or multipliers go to the shader in one small parameter buffer.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "buffers.h"
#include "ops_internal.h"
#include "pipelines.h"
#include "qforge/error.h"
#include "qforge/reference.h"
#include "windows.h"

namespace qforge::vulkan {
namespace {

constexpr std::uint64_t kLocal = 256;  // invocations per workgroup (conv_direct.comp)

struct ConvPush {
  std::int32_t c, h, w, o;
  std::int32_t oh, ow, kh, kw;
  std::int32_t stride_h, stride_w, dilation_h, dilation_w;
  std::int32_t pad_top, pad_left, cg, og;
  std::int32_t zx;
  std::uint32_t flags;
  std::uint32_t count;
  std::uint32_t x_lead, w_lead, y_lead, bias_lead;
  std::uint32_t scale_off;
  std::int32_t zy;
  std::uint32_t lo_bits, hi_bits;
  std::uint32_t sx_bits;
  std::uint32_t zero;
};
static_assert(sizeof(ConvPush) <= 128, "push constants beyond the guaranteed 128 bytes");

std::uint32_t bits(float v) {
  std::uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  return b;
}

std::int32_t i32(std::int64_t v) { return static_cast<std::int32_t>(v); }

// The output clamp of qlinear_conv in codes, as the reference derives it from the activation.
std::pair<std::int32_t, std::int32_t> code_clamp(const ConvDesc& d) {
  const QuantizationParams& y = *d.y_params;
  auto q = [&](float v) {
    return reference::quantize_value(v, y.scale(), y.zero_point(), y.qmin(), y.qmax());
  };
  switch (d.activation) {
    case ConvActivation::none: break;
    case ConvActivation::relu: return {q(0.0f), y.qmax()};
    case ConvActivation::relu6: return {q(0.0f), q(6.0f)};
    case ConvActivation::clamp: return {q(d.clamp_min), q(d.clamp_max)};
  }
  return {y.qmin(), y.qmax()};
}

std::pair<float, float> float_clamp(const ConvDesc& d) {
  const float inf = std::numeric_limits<float>::infinity();
  switch (d.activation) {
    case ConvActivation::none: break;
    case ConvActivation::relu: return {0.0f, inf};
    case ConvActivation::relu6: return {0.0f, 6.0f};
    case ConvActivation::clamp: return {d.clamp_min, d.clamp_max};
  }
  return {-inf, inf};
}

// "(n, o, oh, ow)" of the element at linear index e of Y.
std::string position(const ConvDesc& d, std::uint64_t e) {
  const auto O = static_cast<std::uint64_t>(d.out_channels);
  const auto OH = static_cast<std::uint64_t>(d.out_h()), OW = static_cast<std::uint64_t>(d.out_w());
  std::uint64_t n, o, y, x;
  if (d.layout == ConvLayout::nhwc) {
    o = e % O, e /= O, x = e % OW, e /= OW, y = e % OH, n = e / OH;
  } else {
    x = e % OW, e /= OW, y = e % OH, e /= OH, o = e % O, n = e / O;
  }
  return "(" + std::to_string(n) + ", " + std::to_string(o) + ", " + std::to_string(y) + ", " +
         std::to_string(x) + ")";
}

}  // namespace

const Pipeline& conv_pipeline(Context& ctx) {
  return ctx.pipelines().get("conv_direct", 6, sizeof(ConvPush));
}

double run_conv(Stream& st, OpKind op, const ConvDesc& d, const void* x, const void* w,
                const void* bias, void* y) {
  Context& ctx = st.context();
  const std::string name(to_string(op));
  const auto x_count = static_cast<std::uint64_t>(d.n * d.c * d.h * d.w);
  const auto w_count =
      static_cast<std::uint64_t>(d.out_channels * (d.c / d.groups) * d.kernel_h * d.kernel_w);
  const auto y_count = static_cast<std::uint64_t>(d.n * d.out_channels * d.out_h() * d.out_w());
  if (y_count == 0) return 0.0;
  const bool out8 = op == OpKind::qlinear_conv;
  const std::uint64_t elt = out8 ? 1 : 4;
  const Resolved ry = resolve(ctx, y, y_count * elt, name + ": y");
  if (!out8 && ry.offset % 4 != 0)
    throw Error(ErrorCode::invalid_argument,
                name + ": y at byte offset " + std::to_string(ry.offset) +
                    " of its buffer; expected 4-byte alignment for int32/float32 data");
  // An empty reduction (C / groups = 0) reads nothing: X and W may be empty (and null).
  std::optional<Resolved> rx, rw, rb;
  if (x_count > 0) rx = resolve(ctx, x, x_count, name + ": x");
  if (w_count > 0) rw = resolve(ctx, w, w_count, name + ": w");
  if (d.bias != ConvBias::none) {
    rb = resolve(ctx, bias, static_cast<std::uint64_t>(d.out_channels) * 4,
                 name + ": bias (desc.bias is set)");
    if (rb->offset % 4 != 0)
      throw Error(ErrorCode::invalid_argument,
                  name + ": bias at byte offset " + std::to_string(rb->offset) +
                      " of its buffer; expected 4-byte alignment for int32/float32 data");
  }

  // Params: zero points of W, then scales (conv_dequant) or multipliers (qlinear_conv).
  const QuantizationParams& pw = d.w_params;
  const std::size_t nw = pw.count();
  std::vector<std::uint32_t> params(2 * nw);
  const float sx = d.x_params.scale();
  for (std::size_t i = 0; i < nw; ++i) {
    params[i] = static_cast<std::uint32_t>(pw.zero_point(i));
    const float s = out8 ? (sx * pw.scale(i)) / d.y_params->scale()  // float32, in this order
                         : pw.scale(i);
    params[nw + i] = bits(s);
  }
  DeviceBuffer& pbuf = scratch(st, "conv_params", params.size() * 4, MemoryKind::upload);
  std::memcpy(pbuf.mapped(), params.data(), params.size() * 4);
  DeviceBuffer& flag = scratch(st, "conv_overflow", 4, MemoryKind::readback);
  const std::uint32_t none = 0xffffffffu;
  std::memcpy(flag.mapped(), &none, 4);

  const std::uint32_t mode = op == OpKind::conv_integer                   ? 0u
                             : op == OpKind::conv_dequant                 ? 1u
                             : d.requant_mode == RequantMode::fixed_point ? 3u
                                                                          : 2u;
  const std::uint32_t bias_kind = d.bias == ConvBias::int32 ? 1u
                                  : d.bias == ConvBias::f32 ? 2u
                                                            : 0u;
  ConvPush push{};
  push.c = i32(d.c), push.h = i32(d.h), push.w = i32(d.w), push.o = i32(d.out_channels);
  push.oh = i32(d.out_h()), push.ow = i32(d.out_w());
  push.kh = i32(d.kernel_h), push.kw = i32(d.kernel_w);
  // Strides past the padded extent give one output row (index 0) and dilations of a one-tap
  // kernel are never multiplied by more than 0: both may exceed int32 (up to 2^48), and any
  // positive stand-in computes the same; the rest are below 2^30 (supports()).
  const std::int64_t big = std::int64_t{1} << 30;
  push.stride_h = i32(std::min(d.stride_h, big)), push.stride_w = i32(std::min(d.stride_w, big));
  push.dilation_h = i32(d.kernel_h == 1 ? 1 : d.dilation_h);
  push.dilation_w = i32(d.kernel_w == 1 ? 1 : d.dilation_w);
  push.pad_top = i32(d.pad_top), push.pad_left = i32(d.pad_left);
  push.cg = i32(d.c / d.groups), push.og = i32(d.out_channels / d.groups);
  push.zx = d.x_params.zero_point();
  push.flags = (d.layout == ConvLayout::nhwc ? 1u : 0u) |
               (d.x_params.dtype() == DType::int8 ? 2u : 0u) |
               (pw.dtype() == DType::int8 ? 4u : 0u) | (bias_kind << 3) | (mode << 5) |
               (nw > 1 ? 1u << 7 : 0u);
  push.count = static_cast<std::uint32_t>(y_count);
  push.scale_off = static_cast<std::uint32_t>(nw);
  push.sx_bits = bits(sx);
  if (out8) {
    const auto [lo, hi] = code_clamp(d);
    push.zy = d.y_params->zero_point();
    push.lo_bits = static_cast<std::uint32_t>(lo);
    push.hi_bits = static_cast<std::uint32_t>(hi);
  } else {
    const auto [lo, hi] = float_clamp(d);
    push.lo_bits = bits(lo);
    push.hi_bits = bits(hi);
  }

  const DeviceCaps& caps = ctx.caps();
  const Window wy = window(caps, *ry.buffer, ry.offset, y_count * elt);
  const Window wp = window(caps, pbuf, 0, params.size() * 4);
  const Window wflag = window(caps, flag, 0, 4);
  // Absent operands bind the parameter buffer: the shader never reads them.
  const Window wx = rx ? window(caps, *rx->buffer, rx->offset, x_count) : wp;
  const Window ww = rw ? window(caps, *rw->buffer, rw->offset, w_count) : wp;
  const Window wb =
      rb ? window(caps, *rb->buffer, rb->offset, static_cast<std::uint64_t>(d.out_channels) * 4)
         : wp;
  push.x_lead = static_cast<std::uint32_t>(wx.lead);
  push.w_lead = static_cast<std::uint32_t>(ww.lead);
  push.y_lead = static_cast<std::uint32_t>(wy.lead);
  push.bias_lead = static_cast<std::uint32_t>(wb.lead / 4);
  const std::uint64_t invocations = out8 ? (wy.lead + y_count + 3) / 4 - wy.lead / 4 : y_count;

  const Pipeline& pipe = conv_pipeline(ctx);
  Commands& cmd = st.commands();
  cmd.begin();
  const Grid g = grid_for(caps, (invocations + kLocal - 1) / kLocal);
  const BufferBinding b[] = {wx.binding, ww.binding, wp.binding,
                             wb.binding, wy.binding, wflag.binding};
  cmd.dispatch(pipe, b, &push, sizeof push, g.x, g.y);
  const double ns = cmd.submit();

  std::uint32_t first = none;
  std::memcpy(&first, flag.mapped(), 4);
  if (first != none)
    throw Error(ErrorCode::overflow,
                name + ": accumulator plus bias at (n, o, oh, ow) = " + position(d, first) +
                    " does not fit int32; expected a result in [-2147483648, 2147483647] "
                    "(the vulkan backend accumulates in int32; y is left undefined)");
  return ns;
}

}  // namespace qforge::vulkan
