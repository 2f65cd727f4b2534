// Exact equality of op descriptors, for the plans the accelerator keeps per decided bucket: a
// plan serves only the descriptor it was made for (its params, extents, modes), so a cached
// plan is reused only when every field is the same. Params compare by identity first
// (inline, then QuantizationParams::operator==), which makes the usual case (the caller passes the
// params it passed last time) a handful of integer compares. Floats other than scales compare by
// their bits, so that -0 and 0 clamps or multipliers never share a plan.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

#include "qforge/op_desc.h"

namespace qforge::accel {

inline bool same_bits(float x, float y) noexcept {
  return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
}

// Identity first, inline: the out-of-line operator== only when the params were built anew.
inline bool same(const QuantizationParams& x, const QuantizationParams& y) {
  return (x.identity() != 0 && x.identity() == y.identity()) || x == y;
}

inline bool same(const std::optional<QuantizationParams>& x,
                 const std::optional<QuantizationParams>& y) {
  return x.has_value() == y.has_value() && (!x || same(*x, *y));
}

inline bool same(const QuantizeDesc& x, const QuantizeDesc& y) {
  return x.float_type == y.float_type && x.shape == y.shape && same(x.params, y.params);
}

inline bool same(const RequantizeDesc& x, const RequantizeDesc& y) {
  if (x.axis != y.axis || x.out_dtype != y.out_dtype || x.out_zero_point != y.out_zero_point ||
      x.mode != y.mode || x.shape != y.shape || x.multipliers.size() != y.multipliers.size())
    return false;
  for (std::size_t i = 0; i < x.multipliers.size(); ++i)
    if (!same_bits(x.multipliers[i], y.multipliers[i])) return false;
  return true;
}

// Every field but A's params.
inline bool same_but_a(const MatmulDesc& x, const MatmulDesc& y) {
  return x.m == y.m && x.n == y.n && x.k == y.k && x.b_layout == y.b_layout &&
         x.has_bias == y.has_bias && x.out_type == y.out_type && x.requant_mode == y.requant_mode &&
         x.activation == y.activation && same_bits(x.clamp_min, y.clamp_min) &&
         same_bits(x.clamp_max, y.clamp_max) && x.a_params_at_run == y.a_params_at_run &&
         same(x.b, y.b) && same(x.y, y.y);
}

// A's dtype and scheme: all a descriptor with A's params given at run says of them.
inline bool same_a_kind(const QuantizationParams& x, const QuantizationParams& y) {
  return x.dtype() == y.dtype() && x.scheme() == y.scheme();
}

// With A's params given at run (MatmulDesc::a_params_at_run) their values are placeholders.
inline bool same(const MatmulDesc& x, const MatmulDesc& y) {
  return same_but_a(x, y) && (x.a_params_at_run ? same_a_kind(x.a, y.a) : same(x.a, y.a));
}

// Whether a plan made for `flagged` (A's params given at run) serves the plain descriptor `d`
// when given d's A values: per-tensor A of the same dtype and scheme, every other field the same.
inline bool serves_at_run(const MatmulDesc& flagged, const MatmulDesc& d) {
  return flagged.a_params_at_run && !d.a_params_at_run && d.m == flagged.m && d.n == flagged.n &&
         d.k == flagged.k && d.b_layout == flagged.b_layout && d.has_bias == flagged.has_bias &&
         d.out_type == flagged.out_type && d.requant_mode == flagged.requant_mode &&
         d.activation == flagged.activation && same_bits(d.clamp_min, flagged.clamp_min) &&
         same_bits(d.clamp_max, flagged.clamp_max) && same_a_kind(d.a, flagged.a) &&
         same(d.b, flagged.b) && same(d.y, flagged.y);
}

inline bool same(const DynamicQuantizeDesc& x, const DynamicQuantizeDesc& y) {
  return x.shape == y.shape;
}

inline bool same(const LinearDesc& x, const LinearDesc& y) {
  return x.m == y.m && x.n == y.n && x.k == y.k && x.has_bias == y.has_bias && same(x.w, y.w);
}

inline bool same(const ConvDesc& x, const ConvDesc& y) {
  return x.layout == y.layout && x.n == y.n && x.c == y.c && x.h == y.h && x.w == y.w &&
         x.out_channels == y.out_channels && x.kernel_h == y.kernel_h && x.kernel_w == y.kernel_w &&
         x.stride_h == y.stride_h && x.stride_w == y.stride_w && x.dilation_h == y.dilation_h &&
         x.dilation_w == y.dilation_w && x.pad_top == y.pad_top && x.pad_left == y.pad_left &&
         x.pad_bottom == y.pad_bottom && x.pad_right == y.pad_right && x.groups == y.groups &&
         x.bias == y.bias && x.requant_mode == y.requant_mode && x.activation == y.activation &&
         same_bits(x.clamp_min, y.clamp_min) && same_bits(x.clamp_max, y.clamp_max) &&
         same(x.x_params, y.x_params) && same(x.w_params, y.w_params) &&
         same(x.y_params, y.y_params);
}

// Whether every params of `x` has the identity of the same params of `y` (equal contents
// assumed): then comparing them again costs integer compares only.
inline bool same_ids(const QuantizationParams& x, const QuantizationParams& y) {
  return x.identity() == y.identity();
}
inline bool same_ids(const std::optional<QuantizationParams>& x,
                     const std::optional<QuantizationParams>& y) {
  return !x || !y || same_ids(*x, *y);
}
inline bool same_ids(const QuantizeDesc& x, const QuantizeDesc& y) {
  return same_ids(x.params, y.params);
}
inline bool same_ids(const RequantizeDesc&, const RequantizeDesc&) { return true; }
inline bool same_ids(const MatmulDesc& x, const MatmulDesc& y) {
  return same_ids(x.a, y.a) && same_ids(x.b, y.b) && same_ids(x.y, y.y);
}
inline bool same_ids(const DynamicQuantizeDesc&, const DynamicQuantizeDesc&) { return true; }
inline bool same_ids(const LinearDesc& x, const LinearDesc& y) { return same_ids(x.w, y.w); }
inline bool same_ids(const ConvDesc& x, const ConvDesc& y) {
  return same_ids(x.x_params, y.x_params) && same_ids(x.w_params, y.w_params) &&
         same_ids(x.y_params, y.y_params);
}

}  // namespace qforge::accel
