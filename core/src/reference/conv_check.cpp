// The descriptor checks of conv_integer, qlinear_conv and conv_dequant, and the int32 bound
// that backends use to claim convolutions.
#include <algorithm>
#include <cmath>
#include <limits>

#include "qforge/checked_size.h"
#include "qforge/reference.h"
#include "qforge/reference_16x8.h"
#include "reference/detail.h"

namespace qforge::reference {
namespace detail {
namespace {

void require_positive(const std::string& op, const char* what, std::int64_t v) {
  if (v < 1)
    fail(ErrorCode::invalid_argument, op,
         std::string(what) + " = " + std::to_string(v) + "; expected >= 1");
}

void require_extent(const std::string& op, const char* what, std::int64_t v) {
  require_non_negative(op, what, v);
  if (v > kMaxSize)
    fail(ErrorCode::invalid_argument, op,
         std::string(what) + " = " + std::to_string(v) +
             " exceeds the size limit; expected at most 2^48 (checked_size.h)");
}

void require_8bit(const std::string& op, const char* which, const QuantizationParams& p) {
  if ((p.dtype() != DType::int8 && p.dtype() != DType::uint8) ||
      p.scheme().mapping == Mapping::logarithmic)
    fail(ErrorCode::invalid_argument, op,
         std::string(which) + " params " + p.to_string() +
             "; expected int8 or uint8 with an affine or symmetric mapping");
}

// The dilated kernel must fit the padded input along one axis.
void check_axis(const std::string& op, const char* axis, std::int64_t in, std::int64_t pad_begin,
                std::int64_t pad_end, std::int64_t kernel, std::int64_t dilation) {
  const std::int64_t span = saturating_mul(dilation, kernel - 1);
  const std::int64_t padded = in + pad_begin + pad_end;  // each at most 2^48: exact
  if (span >= padded)
    fail(ErrorCode::invalid_argument, op,
         std::string("the dilated kernel along ") + axis + " spans " +
             (span >= kMaxSize ? std::string("more than 2^48") : std::to_string(span + 1)) +
             " positions but the padded input has " + std::to_string(padded) +
             "; expected a kernel that fits the input plus its pads (an output extent >= 1)");
}

std::size_t output_element_bytes(OpKind kind) {
  return kind == OpKind::qlinear_conv ? 1 : 4;  // int32 or float32 otherwise
}

void check_activation(const std::string& op, OpKind kind, const ConvDesc& d) {
  if (d.activation == ConvActivation::none) return;
  if (kind == OpKind::conv_integer)
    fail(ErrorCode::invalid_argument, op,
         "activation " + std::string(to_string(d.activation)) +
             "; expected none (ConvInteger's int32 output has no epilogue)");
  if (d.activation == ConvActivation::clamp &&
      !(std::isfinite(d.clamp_min) && std::isfinite(d.clamp_max) && d.clamp_min <= d.clamp_max))
    fail(ErrorCode::invalid_argument, op,
         "clamp bounds [" + float_text(d.clamp_min) + ", " + float_text(d.clamp_max) +
             "]; expected finite bounds with clamp_min <= clamp_max");
}

void check_bias(const std::string& op, OpKind kind, const ConvDesc& d) {
  if (d.bias == ConvBias::none) return;
  if (kind == OpKind::conv_integer)
    fail(ErrorCode::invalid_argument, op,
         "bias " + std::string(to_string(d.bias)) + "; expected none (ONNX ConvInteger has none)");
  if (kind == OpKind::qlinear_conv && d.bias != ConvBias::int32)
    fail(ErrorCode::invalid_argument, op,
         "bias " + std::string(to_string(d.bias)) +
             "; expected none or int32 at scale sx * sw (ONNX QLinearConv's B)");
}

void check_output(const std::string& op, const ConvDesc& d) {
  if (!d.y_params)
    fail(ErrorCode::invalid_argument, op,
         "no output params (y_params is empty); expected per-tensor int8 or uint8 params");
  const QuantizationParams& y = *d.y_params;
  if (y.scheme().granularity != Granularity::per_tensor)
    fail(ErrorCode::invalid_argument, op,
         "output params " + y.to_string() + "; expected per-tensor int8 or uint8 params");
  require_8bit(op, "output", y);
  if (d.out_channels == 0 || d.w_params.scales().empty()) return;
  // Float multiplication and division round monotonically: the largest scales decide.
  const float sx = d.x_params.scale();
  const float sw = *std::max_element(d.w_params.scales().begin(), d.w_params.scales().end());
  if (!std::isfinite((sx * sw) / y.scale()))
    fail(ErrorCode::invalid_argument, op,
         "multiplier (sx * sw) / sy overflows float32 for sx = " + float_text(sx) +
             ", sw = " + float_text(sw) + ", sy = " + float_text(y.scale()) +
             "; expected scales whose ratio fits float32");
}

// Extents, strides, dilations, pads, groups and the operand sizes (Y of `y_bytes` per element).
void check_geometry(const std::string& op, const ConvDesc& d, std::size_t y_bytes) {
  require_extent(op, "n", d.n);
  require_extent(op, "c", d.c);
  require_extent(op, "h", d.h);
  require_extent(op, "w", d.w);
  require_extent(op, "out_channels", d.out_channels);
  for (const auto& [what, v] : {std::pair{"pad_top", d.pad_top},
                                {"pad_left", d.pad_left},
                                {"pad_bottom", d.pad_bottom},
                                {"pad_right", d.pad_right}})
    require_extent(op, what, v);
  for (const auto& [what, v] : {std::pair{"kernel_h", d.kernel_h},
                                {"kernel_w", d.kernel_w},
                                {"stride_h", d.stride_h},
                                {"stride_w", d.stride_w},
                                {"dilation_h", d.dilation_h},
                                {"dilation_w", d.dilation_w},
                                {"groups", d.groups}}) {
    require_positive(op, what, v);
    require_extent(op, what, v);
  }
  if (d.c % d.groups != 0)
    fail(ErrorCode::invalid_argument, op,
         "c = " + std::to_string(d.c) + " is not a multiple of groups = " +
             std::to_string(d.groups) + "; expected every group to read C / groups channels");
  if (d.out_channels % d.groups != 0)
    fail(ErrorCode::invalid_argument, op,
         "out_channels = " + std::to_string(d.out_channels) +
             " is not a multiple of groups = " + std::to_string(d.groups) +
             "; expected every group to write O / groups channels (depthwise: O = C * multiplier)");
  check_axis(op, "H", d.h, d.pad_top, d.pad_bottom, d.kernel_h, d.dilation_h);
  check_axis(op, "W", d.w, d.pad_left, d.pad_right, d.kernel_w, d.dilation_w);
  const Shape xs = d.x_shape(), ws = d.w_shape(), ys = d.y_shape();
  checked_operand(op, d.layout == ConvLayout::nchw ? "X [N, C, H, W]" : "X [N, H, W, C]", xs,
                  d.x_params.dtype());
  checked_operand(op, "W [O, C / groups, KH, KW]", ws, d.w_params.dtype());
  checked_operand(op, d.layout == ConvLayout::nchw ? "Y [N, O, OH, OW]" : "Y [N, OH, OW, O]", ys,
                  y_bytes);
  if (d.bias != ConvBias::none) checked_operand(op, "bias [O]", {d.out_channels}, 4);
}

// W: per tensor or per output channel (axis 0), valid for the OIHW shape.
void check_w_layout(const std::string& op, const ConvDesc& d) {
  const Shape ws = d.w_shape();
  const Granularity wg = d.w_params.scheme().granularity;
  const int axis = d.w_params.scheme().axis;
  if (wg == Granularity::block || (wg == Granularity::per_channel && axis != 0 && axis != -4))
    fail(ErrorCode::invalid_argument, op,
         "W params " + d.w_params.to_string() +
             "; expected per-tensor or per_channel along axis 0 (one pair per output channel of "
             "the OIHW weights)");
  try {
    d.w_params.validate_for(ws);
  } catch (const Error& e) {
    fail(e.code(), op, "W params for W " + to_string(ws) + ": " + e.what());
  }
}

// One 16-bit symmetric params with zero point 0, per tensor.
void require_s16(const std::string& op, const char* which, const QuantizationParams& p) {
  if (p.dtype() != DType::int16 || p.scheme().mapping == Mapping::logarithmic ||
      p.scheme().granularity != Granularity::per_tensor || p.zero_point() != 0)
    fail(ErrorCode::invalid_argument, op,
         std::string(which) + " params " + p.to_string() +
             "; expected per-tensor int16 with zero point 0 (TFLite's 16x8 activations)");
}

}  // namespace

void validate_conv(const std::string& op, OpKind kind, const ConvDesc& d) {
  check_geometry(op, d, output_element_bytes(kind));

  require_8bit(op, "X", d.x_params);
  if (d.x_params.scheme().granularity != Granularity::per_tensor)
    fail(ErrorCode::invalid_argument, op,
         "X params " + d.x_params.to_string() +
             "; expected per-tensor params (ONNX's x_zero_point and x_scale are scalars)");
  require_8bit(op, "W", d.w_params);
  check_w_layout(op, d);
  check_bias(op, kind, d);
  check_activation(op, kind, d);
  if (kind == OpKind::qlinear_conv) check_output(op, d);
}

void validate_conv_16x8(const std::string& op, const ConvDesc& d) {
  check_geometry(op, d, 2);
  require_s16(op, "X", d.x_params);
  if (d.w_params.dtype() != DType::int8 || d.w_params.scheme().mapping == Mapping::logarithmic ||
      d.w_params.min_zero_point() != 0 || d.w_params.max_zero_point() != 0)
    fail(ErrorCode::invalid_argument, op,
         "W params " + d.w_params.to_string() +
             "; expected int8 symmetric (zero point 0), per tensor or per output channel");
  check_w_layout(op, d);
  if (d.bias != ConvBias::none)
    fail(ErrorCode::invalid_argument, op,
         "bias " + std::string(to_string(d.bias)) +
             "; expected none (the int64 bias is qlinear_conv_16x8's argument, null for none)");
  if (d.requant_mode != RequantMode::fixed_point)
    fail(ErrorCode::invalid_argument, op,
         "requant_mode " + std::string(to_string(d.requant_mode)) +
             "; expected fixed_point (TFLite's 16x8 kernels are integer-only)");
  check_activation(op, OpKind::qlinear_conv, d);
  if (!d.y_params)
    fail(ErrorCode::invalid_argument, op,
         "no output params (y_params is empty); expected per-tensor int16 with zero point 0");
  require_s16(op, "Y", *d.y_params);
  for (std::int64_t o = 0; o < d.out_channels; ++o) {
    const float sw = d.w_params.scale(d.w_params.scheme().granularity == Granularity::per_tensor
                                          ? 0
                                          : static_cast<std::size_t>(o));
    multiplier_16x8(d.x_params.scale(), sw, d.y_params->scale(), op,
                    "output channel " + std::to_string(o));
  }
}

std::pair<std::int32_t, std::int32_t> conv_output_clamp(const ConvDesc& d) {
  return conv_output_clamp(d, d.y_params->qmin(), d.y_params->qmax());
}

std::pair<std::int32_t, std::int32_t> conv_output_clamp(const ConvDesc& d, std::int32_t qmin,
                                                        std::int32_t qmax) {
  const QuantizationParams& y = *d.y_params;
  auto q = [&](float v) { return quantize_value(v, y.scale(), y.zero_point(), qmin, qmax); };
  switch (d.activation) {
    case ConvActivation::none: return {qmin, qmax};
    case ConvActivation::relu: return {q(0.0f), qmax};
    case ConvActivation::relu6: return {q(0.0f), q(6.0f)};
    case ConvActivation::clamp: return {q(d.clamp_min), q(d.clamp_max)};
  }
  return {qmin, qmax};
}

}  // namespace detail

std::int64_t int32_safe_reduction(const ConvDesc& desc) {
  const std::int64_t worst =
      std::max<std::int64_t>(1, detail::max_centered_magnitude(desc.x_params) *
                                    detail::max_centered_magnitude(desc.w_params));
  return std::numeric_limits<std::int32_t>::max() / worst;
}

}  // namespace qforge::reference
