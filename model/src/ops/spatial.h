// Window geometry shared by Conv and the pools: kernel, strides, dilations and pads for each
// spatial axis, the output extent, and auto_pad resolved into explicit pads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/kernel.h"

// The float window loops (direct depthwise conv, pools) are compiled twice on x86-64 GCC/Clang:
// an AVX2 version and a baseline one, picked once at load time through an ifunc, so the library
// stays runnable on any x86-64 while 8-wide vectors are used where the CPU has them.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QFORGE_MODEL_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define QFORGE_MODEL_VECTOR_CLONES
#endif

namespace qforge::model::ops {

struct WindowGeometry {
  std::vector<std::int64_t> kernel, strides, dilations, pad_begin, pad_end, in, out;
  std::int64_t spatial() const { return static_cast<std::int64_t>(in.size()); }
};

// `in_spatial`: the input's spatial extents. `kernel`: from the attribute or the weight shape.
// Reads strides, dilations (when allow_dilations), pads, auto_pad and ceil_mode (when
// allow_ceil) from the node; checks every value and throws naming the node.
WindowGeometry window_geometry(const Node& node, const Shape& in_spatial,
                               const std::vector<std::int64_t>& kernel, bool allow_dilations,
                               bool allow_ceil);

// Output positions [first, second) of one axis whose input position o * stride + start lies in
// [0, extent), for `count` output positions: the columns where a window tap needs no padding
// check, worked out once so that the loop over them has no bounds test and vectorises.
using ColumnRange = std::pair<std::int64_t, std::int64_t>;
inline ColumnRange valid_range(std::int64_t start, std::int64_t stride, std::int64_t extent,
                               std::int64_t count) {
  const std::int64_t lo = start >= 0 ? 0 : (-start + stride - 1) / stride;
  const std::int64_t last = extent - 1 - start;
  const std::int64_t hi = last < 0 ? 0 : last / stride + 1;
  return {std::min(lo, count), std::clamp(hi, std::min(lo, count), count)};
}

// Import-time checks of the window attributes (auto_pad values, lengths are checked at infer).
void check_window_attributes(const Node& node);

}  // namespace qforge::model::ops
