// conv_integer, qlinear_conv and conv_dequant (ConvDesc): their call, key, bucket words,
// probes, random inputs and work.
#include <cmath>

#include "accelerator/bucket_words.h"
#include "accelerator/key_builder.h"
#include "accelerator/probe_shapes.h"
#include "accelerator/random_values.h"
#include "op_table/kinds/example_params.h"
#include "op_table/kinds/kind_work.h"
#include "op_table/op_hooks.h"
#include "qforge/checked_size.h"

namespace qforge {
namespace accel {
namespace {

// Small geometry (kernel extents, strides, dilations): the exact value up to 14, 15 beyond.
std::uint64_t small_code(std::int64_t v) noexcept {
  return static_cast<std::uint64_t>(v < 0 ? 0 : v > 15 ? 15 : v);
}

}  // namespace

// op 4 + residency 1 + layout 1 + x 7 + w 7 + bias 2 + mode 1 + y 5 + activation 2
// + geometry 6 x 4 + depthwise 1 + pads 1 + extents 6 x 7 = 98 bits.
WorkloadKey make_key(OpKind op, const ConvDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(op), r);
  b.put(static_cast<std::uint64_t>(d.layout), 1);
  for (const auto* p : {&d.x_params, &d.w_params}) {
    b.put(static_cast<std::uint64_t>(p->dtype()), 3);
    b.put(static_cast<std::uint64_t>(p->scheme().mapping), 2);
    b.put(static_cast<std::uint64_t>(p->scheme().granularity), 2);
  }
  b.put(op == OpKind::conv_integer ? 0 : static_cast<std::uint64_t>(d.bias), 2);
  const bool qlinear = op == OpKind::qlinear_conv;
  b.put(qlinear ? static_cast<std::uint64_t>(d.requant_mode) : 0, 1);
  const bool has_y = qlinear && d.y_params.has_value();
  b.put(has_y ? static_cast<std::uint64_t>(d.y_params->dtype()) : 0, 3);
  b.put(has_y ? static_cast<std::uint64_t>(d.y_params->scheme().mapping) : 0, 2);
  b.put(op == OpKind::conv_integer ? 0 : static_cast<std::uint64_t>(d.activation), 2);
  for (const std::int64_t v :
       {d.kernel_h, d.kernel_w, d.stride_h, d.stride_w, d.dilation_h, d.dilation_w})
    b.put(small_code(v), 4);
  b.put(d.groups > 1 && d.groups == d.c ? 1 : 0, 1);  // depthwise
  b.put(d.pad_top || d.pad_left || d.pad_bottom || d.pad_right ? 1 : 0, 1);
  b.dim(d.n);
  b.dim(d.c);
  b.dim(d.h);
  b.dim(d.w);
  b.dim(d.out_channels);
  b.dim(d.groups);
  return b.key();
}

std::string bucket_words(OpKind op, const ConvDesc& d) {
  auto pair = [](std::int64_t a, std::int64_t b) {
    return std::to_string(a) + "x" + std::to_string(b);
  };
  std::string s = " " + std::string(to_string(d.layout)) + " x=" + params_text(d.x_params) +
                  " w=" + params_text(d.w_params);
  if (op != OpKind::conv_integer && d.bias != ConvBias::none)
    s += " bias=" + std::string(to_string(d.bias));
  if (op == OpKind::qlinear_conv && d.y_params)
    s += " y=" + std::string(name(d.y_params->dtype())) + "/" +
         std::string(to_string(d.y_params->scheme().mapping)) + " " +
         std::string(to_string(d.requant_mode));
  if (op != OpKind::conv_integer && d.activation != ConvActivation::none)
    s += " act=" + std::string(to_string(d.activation));
  s += " kernel=" + pair(d.kernel_h, d.kernel_w) + " stride=" + pair(d.stride_h, d.stride_w) +
       " dilation=" + pair(d.dilation_h, d.dilation_w);
  if (d.groups > 1 && d.groups == d.c) s += " depthwise";
  if (d.pad_top || d.pad_left || d.pad_bottom || d.pad_right) s += " padded";
  return s + upto("n", d.n) + upto("c", d.c) + upto("h", d.h) + upto("w", d.w) +
         upto("o", d.out_channels) + upto("groups", d.groups);
}

}  // namespace accel

namespace op_table_detail {

// A 3x3 convolution over [1, 32, 28, 28], SAME padding: dense and depthwise, both layouts,
// u8 x s8 and s8 x s8, weights per tensor and per output channel.
std::vector<OpExample> conv_examples(OpKind op) {
  std::vector<OpExample> out;
  for (const ConvLayout layout : {ConvLayout::nchw, ConvLayout::nhwc})
    for (const bool depthwise : {false, true})
      for (const DType x : {DType::uint8, DType::int8})
        for (const Granularity g : {Granularity::per_tensor, Granularity::per_channel}) {
          ConvDesc d;
          d.layout = layout;
          d.n = 1;
          d.c = d.out_channels = 32;
          d.h = d.w = 28;
          d.kernel_h = d.kernel_w = 3;
          d.groups = depthwise ? d.c : 1;
          apply_auto_pad(d, AutoPad::same_upper);
          d.x_params = example_params(x, Granularity::per_tensor, 1, 1, 0);
          d.w_params = example_params(DType::int8, g, d.out_channels, 1, 0);
          if (op != OpKind::conv_integer) d.bias = ConvBias::int32;
          if (op == OpKind::qlinear_conv) d.y_params = d.x_params;
          std::string label = dtype_short(x) + "xs8 " + std::string(to_string(layout)) +
                              (depthwise ? " dw3x3" : " 3x3") +
                              " w=" + to_string(d.w_params.scheme());
          out.push_back({std::move(label), {op, std::move(d)}});
        }
  return out;
}

OpWork conv_work(const OpDesc& op) {
  const auto& d = std::get<ConvDesc>(op.desc);
  return {element_estimate(d.y_shape()) * static_cast<double>(d.reduction()),
          OpWork::Unit::multiply_adds};
}

namespace {

using accel::HostArrays;
using accel::IoLayout;
using accel::Rng;
using Returned = std::optional<QuantizationParams>;

struct ConvCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned&) {
    const auto& d = std::get<ConvDesc>(op.desc);
    t.conv(op.op, d, in[0], in[1], d.bias != ConvBias::none ? in[2] : nullptr, out[0]);
    return std::nullopt;
  }
};

// Fewer images, groups, channels per group and output positions; the kernel, strides,
// dilations, pads, layout and the depthwise structure stay as they are.
OpDesc probe(const OpDesc& real, int level, Rng& rng) {
  const auto& d = std::get<ConvDesc>(real.desc);
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
  p.x_params = accel::random_params(rng, d.x_params.dtype(), d.x_params.scheme(), p.x_shape());
  p.w_params = accel::random_params(rng, d.w_params.dtype(), d.w_params.scheme(), p.w_shape());
  if (d.y_params) {
    // As for qlinear_matmul: about the spread of the accumulator over the range's half width.
    const double spread = std::sqrt(static_cast<double>(std::max<std::int64_t>(p.reduction(), 1))) *
                          40.0 * 40.0 * accel::abs_max_scale(p.x_params) *
                          accel::abs_max_scale(p.w_params);
    const float sy = static_cast<float>(spread / 64.0);
    const DType yt = d.y_params->dtype();
    p.y_params =
        d.y_params->scheme().mapping == Mapping::affine
            ? QuantizationParams::per_tensor_affine(yt, sy,
                                                    std::uniform_int_distribution<std::int32_t>(
                                                        traits(yt).qmin, traits(yt).qmax)(rng))
            : QuantizationParams(yt, d.y_params->scheme(), {sy});
  }
  return OpDesc{real.op, p};
}

std::int64_t probe_macs(const OpDesc& real) noexcept {
  const auto& d = std::get<ConvDesc>(real.desc);
  return saturating_mul(
      saturating_mul(saturating_mul(d.n, d.out_channels), saturating_mul(d.out_h(), d.out_w())),
      std::max<std::int64_t>(d.reduction(), 1));
}

void random_inputs(const OpDesc& op, const IoLayout&, Rng& rng, bool, HostArrays& h) {
  const auto& d = std::get<ConvDesc>(op.desc);
  // One more term than the reduction for the bias: |acc| + |bias| stays inside int32.
  const std::int64_t w = accel::overflow_window(d.reduction() + 1);
  h.inputs.push_back(accel::window_codes(rng, d.x_params, d.x_shape(), w));
  h.inputs.push_back(accel::window_codes(rng, d.w_params, d.w_shape(), w));
  const std::size_t o = static_cast<std::size_t>(d.out_channels);
  if (d.bias == ConvBias::f32)
    h.inputs.push_back(accel::float_bytes(FloatType::f32, accel::normal_floats(rng, o, 1.0)));
  if (d.bias == ConvBias::int32) {
    const std::int64_t limit = std::min<std::int64_t>(std::int64_t{1} << 20, w * w);
    std::vector<std::int32_t> b(o);
    for (auto& v : b) v = static_cast<std::int32_t>(accel::uniform(rng, -limit, limit));
    h.inputs.push_back(accel::int32_bytes(b));
  }
}

// The three kinds share the descriptor, its call (conv(OpKind, ...)) and its inputs.
constexpr OpHooks kConvHooks = {.invoke = &invoke_on<ConvCall>,
                                .invoke_reference = &invoke_reference_on<ConvCall>,
                                .probe = &probe,
                                .probe_macs = &probe_macs,
                                .random_inputs = &random_inputs};

}  // namespace

extern const OpHooks kConvIntegerHooks = kConvHooks;
extern const OpHooks kQlinearConvHooks = kConvHooks;
extern const OpHooks kConvDequantHooks = kConvHooks;

}  // namespace op_table_detail
}  // namespace qforge
