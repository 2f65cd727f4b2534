// Choosing a weight group's quantization range (a tensor, a channel or a block): the plain
// min/max, or the clipped range whose round trip through the reference's quantize and
// dequantize has the least squared error on the group's own values (a recipe's weight
// "observer": "mse"; docs/RECIPES.md, docs/NUMERICS.md).
//
// Clipping trades saturating the few largest values for a finer step on all the others; at 4
// bits and blocks of 32 the step is coarse enough that the trade usually pays (llama.cpp's
// make_qkx quantizers search the same way). The search chooses only the range: params follow
// reference::params_from_range and codes reference::quantize, so the stored format and every
// kernel are unchanged, and the result is never worse than min/max because min/max is the
// first candidate and a later one replaces it only when its error is strictly lower.
#pragma once

#include <span>

#include "qforge/dtype.h"
#include "qforge/model/quantize_export.h"
#include "qforge/scheme.h"

namespace qforge::model {

struct WeightRange {
  float lo = 0.0f;  // <= 0, as reference::params_from_range widens it
  float hi = 0.0f;  // >= 0
};

// min(values, 0) and max(values, 0): the range reference::params_from_range would widen to.
QFORGE_QUANTIZE_API WeightRange minmax_range(std::span<const float> values);

// Squared error, in double, of `values` quantized with params_from_range(dtype, mapping, r.lo,
// r.hi) by reference::quantize_value and dequantized by reference::dequantize_value.
QFORGE_QUANTIZE_API double range_squared_error(DType dtype, Mapping mapping, WeightRange r,
                                               std::span<const float> values);

// The range of least range_squared_error among (a * lo, b * hi) of the min/max range, for a and
// b on a grid over [0.5, 1] (a coarse pass in steps of 0.125, then steps of 0.025 within
// 0.075 of the best); symmetric mappings scale by max(|lo|, |hi|) only, so they search a = b. Ties
// keep the earlier candidate, min/max first. Non-finite values give min/max (params_from_range then
// reports them).
QFORGE_QUANTIZE_API WeightRange mse_range(DType dtype, Mapping mapping,
                                          std::span<const float> values);

}  // namespace qforge::model
