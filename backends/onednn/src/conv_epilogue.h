// What the plugin computes after oneDNN's int32 convolution, with the reference's arithmetic
// (docs/NUMERICS.md, "Convolution"): the sum of the reduction's slices (conv_weights.h), the
// weights zero points oneDNN does not take, the int32 bias (with the reference's overflow
// rule), and the output stage of each op kind in the descriptor's layout.
//
// oneDNN could requantize itself, but it rounds after adding the zero point where the reference
// rounds first (docs/ONEDNN.md, as for QLinearMatMul), and its float output stage adds a bias
// before scaling; so oneDNN writes int32 and these loops finish it, over output pixels on OpenMP
// threads.
#pragma once

#include <cstdint>
#include <vector>

#include "qforge/op_desc.h"

namespace qforge::onednn {

struct ConvSums {
  // oneDNN's output: int32 [N * OH * OW][groups * chunks * O / groups], slice j of group g at
  // channels (g * chunks + j) * O / groups.
  const std::int32_t* sums = nullptr;
  std::int64_t chunks = 1;
  // Weights zero points to compensate (per output channel, after the uint8 shift); empty: none.
  const std::vector<std::int32_t>* zero_points = nullptr;
  // With zero points: [N * OH * OW][groups] sums of (x - zx) over each window (window_sums).
  const std::int64_t* windows = nullptr;
};

// For every output pixel and group, the sum of (x - zx) over the taps of its window that lie
// inside the input (padding contributes 0), from X in NHWC.
std::vector<std::int64_t> window_sums(const ConvDesc& d, const void* x_nhwc, int threads);

// acc = sum of slices - zw[o] * window (modulo 2^32: the true acc fits int32, so this is exact
// even where oneDNN's slices wrapped), then the op's output into y. Returns false when acc + an
// int32 bias leaves int32; the caller then runs the reference, which names the position.
bool conv_epilogue(OpKind op, const ConvDesc& d, const ConvSums& s, const void* bias, void* y,
                   int threads);

}  // namespace qforge::onednn
