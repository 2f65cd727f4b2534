// Whole-tensor statistics in one pass over memory: min, max and max|x| over the non-NaN
// elements, and the first index holding +/-inf and the first holding NaN (the reference
// rejects such inputs in some ops and must be matched with an error naming the element).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "qforge/half.h"

namespace qforge::cuda {

inline constexpr std::uint64_t kNoIndex = ~0ull;

struct RangeStats {
  float lo;    // min(0, min x) over non-NaN x
  float hi;    // max(0, max x)
  float amax;  // max |x|
  // linear_forward's per-tensor scale from amax: max(amax / 127, 1e-8) in float32, computed on
  // the device so that the following kernels read it without a round trip through the host.
  float sx;
  std::uint64_t first_inf;  // kNoIndex when none
  std::uint64_t first_nan;
};

// Upper bound on the per-block partial results launch_range_stats writes to `partials`.
inline constexpr int kRangeStatsMaxBlocks = 1024;

// Reduces n elements of x (device) into *out (device). partials: device scratch of
// kRangeStatsMaxBlocks RangeStats.
void launch_range_stats(FloatType type, const void* x, std::int64_t n, RangeStats* partials,
                        RangeStats* out, int multiprocessors, cudaStream_t stream);

}  // namespace qforge::cuda
