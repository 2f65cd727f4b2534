// ConvDesc's geometry: output extents, operand shapes and ONNX's auto_pad.
#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "qforge/checked_size.h"
#include "qforge/error.h"
#include "qforge/op_desc.h"

namespace qforge {
namespace {

// floor((in + pads - effective kernel) / stride) + 1, in saturating arithmetic: the descriptor
// may not be validated yet, and an out-of-range one must give a value the check then rejects.
std::int64_t out_extent(std::int64_t in, std::int64_t pad_begin, std::int64_t pad_end,
                        std::int64_t kernel, std::int64_t stride, std::int64_t dilation) noexcept {
  if (stride < 1 || kernel < 1 || dilation < 1 || in < 0 || pad_begin < 0 || pad_end < 0 ||
      in > kMaxSize || pad_begin > kMaxSize || pad_end > kMaxSize || kernel > kMaxSize ||
      dilation > kMaxSize)
    return 0;
  const std::int64_t span = saturating_mul(dilation, kernel - 1);
  if (span > kMaxSize) return 0;
  const std::int64_t effective = span + 1;
  const std::int64_t padded = in + pad_begin + pad_end;
  if (padded < effective) return 0;
  return (padded - effective) / stride + 1;
}

void require_positive(const char* what, std::int64_t v) {
  if (v < 1)
    throw Error(ErrorCode::invalid_argument, std::string("apply_auto_pad: ") + what + " = " +
                                                 std::to_string(v) + "; expected >= 1");
}

// ONNX's SAME padding of one axis: (begin, end) with OUT = ceil(IN / stride).
std::pair<std::int64_t, std::int64_t> same_pads(std::int64_t in, std::int64_t kernel,
                                                std::int64_t stride, std::int64_t dilation,
                                                bool upper) {
  const std::int64_t out = (in + stride - 1) / stride;
  const std::int64_t span = saturating_mul(dilation, kernel - 1);
  if (span > kMaxSize)
    throw Error(ErrorCode::invalid_argument,
                "apply_auto_pad: dilation " + std::to_string(dilation) + " times kernel extent " +
                    std::to_string(kernel) + " - 1 exceeds 2^48; expected a smaller kernel span");
  const std::int64_t effective = span + 1;
  const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * stride + effective - in);
  const std::int64_t small = total / 2, large = total - small;
  return upper ? std::pair{small, large} : std::pair{large, small};
}

}  // namespace

std::string_view to_string(ConvLayout l) noexcept {
  return l == ConvLayout::nchw ? "nchw" : "nhwc";
}

std::string_view to_string(AutoPad p) noexcept {
  switch (p) {
    case AutoPad::notset: return "notset";
    case AutoPad::same_upper: return "same_upper";
    case AutoPad::same_lower: return "same_lower";
    case AutoPad::valid: return "valid";
  }
  return "unknown";
}

std::string_view to_string(ConvBias b) noexcept {
  switch (b) {
    case ConvBias::none: return "none";
    case ConvBias::f32: return "float32";
    case ConvBias::int32: return "int32";
  }
  return "unknown";
}

std::string_view to_string(ConvActivation a) noexcept {
  switch (a) {
    case ConvActivation::none: return "none";
    case ConvActivation::relu: return "relu";
    case ConvActivation::relu6: return "relu6";
    case ConvActivation::clamp: return "clamp";
  }
  return "unknown";
}

std::int64_t ConvDesc::out_h() const noexcept {
  return out_extent(h, pad_top, pad_bottom, kernel_h, stride_h, dilation_h);
}

std::int64_t ConvDesc::out_w() const noexcept {
  return out_extent(w, pad_left, pad_right, kernel_w, stride_w, dilation_w);
}

Shape ConvDesc::x_shape() const {
  return layout == ConvLayout::nchw ? Shape{n, c, h, w} : Shape{n, h, w, c};
}

Shape ConvDesc::y_shape() const {
  return layout == ConvLayout::nchw ? Shape{n, out_channels, out_h(), out_w()}
                                    : Shape{n, out_h(), out_w(), out_channels};
}

std::int64_t ConvDesc::reduction() const noexcept {
  if (groups < 1 || c < 0 || kernel_h < 0 || kernel_w < 0) return 0;
  return saturating_mul(saturating_mul(c / groups, kernel_h), kernel_w);
}

void apply_auto_pad(ConvDesc& d, AutoPad mode) {
  if (mode == AutoPad::notset) return;
  if (mode == AutoPad::valid) {
    d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 0;
    return;
  }
  require_positive("kernel_h", d.kernel_h);
  require_positive("kernel_w", d.kernel_w);
  require_positive("stride_h", d.stride_h);
  require_positive("stride_w", d.stride_w);
  require_positive("dilation_h", d.dilation_h);
  require_positive("dilation_w", d.dilation_w);
  for (const std::int64_t v :
       {d.h, d.w, d.kernel_h, d.kernel_w, d.stride_h, d.stride_w, d.dilation_h, d.dilation_w})
    if (v < 0 || v > kMaxSize)
      throw Error(ErrorCode::invalid_argument, "apply_auto_pad: an extent, stride or dilation of " +
                                                   std::to_string(v) +
                                                   "; expected 0 to 2^48 (checked_size.h)");
  const bool upper = mode == AutoPad::same_upper;
  std::tie(d.pad_top, d.pad_bottom) = same_pads(d.h, d.kernel_h, d.stride_h, d.dilation_h, upper);
  std::tie(d.pad_left, d.pad_right) = same_pads(d.w, d.kernel_w, d.stride_w, d.dilation_w, upper);
}

}  // namespace qforge
