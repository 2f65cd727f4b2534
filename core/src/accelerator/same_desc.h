// Exact equality of op descriptors, for the plans the accelerator keeps per decided bucket: a
// plan serves only the descriptor it was made for (its params, extents, modes), so a cached
// plan is reused only when every field is the same. Params compare by identity first
// (QuantizationParams::operator==), which makes the usual case (the caller passes the params it
// passed last time) a handful of integer compares. Floats other than scales compare by their
// bits, so that -0 and 0 clamps or multipliers never share a plan.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "qforge/op_desc.h"

namespace qforge::accel {

inline bool same_bits(float x, float y) noexcept {
  return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
}

inline bool same(const QuantizeDesc& x, const QuantizeDesc& y) {
  return x.float_type == y.float_type && x.shape == y.shape && x.params == y.params;
}

inline bool same(const RequantizeDesc& x, const RequantizeDesc& y) {
  if (x.axis != y.axis || x.out_dtype != y.out_dtype || x.out_zero_point != y.out_zero_point ||
      x.mode != y.mode || x.shape != y.shape || x.multipliers.size() != y.multipliers.size())
    return false;
  for (std::size_t i = 0; i < x.multipliers.size(); ++i)
    if (!same_bits(x.multipliers[i], y.multipliers[i])) return false;
  return true;
}

inline bool same(const MatmulDesc& x, const MatmulDesc& y) {
  return x.m == y.m && x.n == y.n && x.k == y.k && x.b_layout == y.b_layout &&
         x.has_bias == y.has_bias && x.out_type == y.out_type && x.requant_mode == y.requant_mode &&
         x.a == y.a && x.b == y.b && x.y == y.y;
}

inline bool same(const DynamicQuantizeDesc& x, const DynamicQuantizeDesc& y) {
  return x.shape == y.shape;
}

inline bool same(const LinearDesc& x, const LinearDesc& y) {
  return x.m == y.m && x.n == y.n && x.k == y.k && x.has_bias == y.has_bias && x.w == y.w;
}

inline bool same(const ConvDesc& x, const ConvDesc& y) {
  return x.layout == y.layout && x.n == y.n && x.c == y.c && x.h == y.h && x.w == y.w &&
         x.out_channels == y.out_channels && x.kernel_h == y.kernel_h && x.kernel_w == y.kernel_w &&
         x.stride_h == y.stride_h && x.stride_w == y.stride_w && x.dilation_h == y.dilation_h &&
         x.dilation_w == y.dilation_w && x.pad_top == y.pad_top && x.pad_left == y.pad_left &&
         x.pad_bottom == y.pad_bottom && x.pad_right == y.pad_right && x.groups == y.groups &&
         x.bias == y.bias && x.requant_mode == y.requant_mode && x.activation == y.activation &&
         same_bits(x.clamp_min, y.clamp_min) && same_bits(x.clamp_max, y.clamp_max) &&
         x.x_params == y.x_params && x.w_params == y.w_params && x.y_params == y.y_params;
}

// The descriptor a plan was made for, when it is of type Desc and equal to `d`.
template <class Desc>
bool same(OpKind op, const Desc& d, const OpDesc& made_for) {
  const Desc* m = std::get_if<Desc>(&made_for.desc);
  return m != nullptr && made_for.op == op && same(d, *m);
}

}  // namespace qforge::accel
