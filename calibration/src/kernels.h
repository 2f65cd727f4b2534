// The per-element work of observing: one pass over memory per kernel, written with GCC/Clang
// vector extensions (8 lanes, lowered to whatever the target has: 2 x SSE2 on baseline x86-64,
// no -march flags needed) so that the loops vectorise without -ffast-math.
//
// Non-finite values are recognised by their bits ((bits & 0x7fffffff) >= 0x7f800000): they are
// skipped by every kernel and counted by the scans.
#pragma once

#include <cstddef>
#include <cstdint>

#include "qforge/calibration/observer.h"

namespace qforge::calibration::kernels {

struct Extremes {
  float lo;  // +inf when no finite value was seen
  float hi;  // -inf when no finite value was seen
  std::int64_t non_finite;
};

// Min and max of the finite values of x[0, n) and the number of non-finite ones.
Extremes scan(const float* x, std::size_t n) noexcept;

// Per channel of a [outer, channels, inner] batch: lowers lo[c] / raises hi[c] to the batch's
// finite extremes (the caller initialises them) and returns the number of non-finite values.
std::int64_t scan_channels(const float* x, const BatchLayout& layout, float* lo,
                           float* hi) noexcept;

// bins / limit as a float multiplier (0 for a zero limit, so every value lands in bin 0).
float inverse_width(float limit, int bins) noexcept;

// Histogram bin of a finite value: |x| bin j = min(floor(|x| * inv_width), bins - 1), offset by
// `bins` for x >= 0 (the layout of Histogram: [negative | positive]).
inline int bin_index(float x, float inv_width, int bins) noexcept {
  const float f = (x < 0.0f ? -x : x) * inv_width;
  const int j = f < static_cast<float>(bins - 1) ? static_cast<int>(f) : bins - 1;
  return j + (x >= 0.0f ? bins : 0);
}

// Counts the finite values of x[0, n) into four interleaved copies of a 2 * bins + 1 counter
// array (the last counter of each copy collects non-finite values): consecutive values go to
// different copies, so runs of equal bins do not serialise on one counter. 16-bit counters keep
// the four copies in L1 for 2048 bins (32 KiB; measured 12% faster than 32-bit ones); the caller
// sums the copies before any counter can pass 65535 (at most one increment per value).
// `all_finite` (known from the scan) selects a loop without the non-finite test.
void bin_counts(const float* x, std::size_t n, float inv_width, int bins, bool all_finite,
                std::uint16_t* counts4) noexcept;

// Adds each finite value of x[0, n) to counts[bin_index(x)] (2 * bins doubles) and returns
// how many it added; per-channel runs, where values spread over many histograms.
std::size_t bin_run(const float* x, std::size_t n, float inv_width, int bins,
                    double* counts) noexcept;

// bin_run for values known to be finite (the batch's scan found no other): vector indices.
void bin_run_finite(const float* x, std::size_t n, float inv_width, int bins,
                    double* counts) noexcept;

// bin_rows for rows known to hold only finite values.
void bin_rows_finite(const float* x, std::int64_t rows, std::int64_t channels,
                     const float* inv_width, int bins, double* const* counts) noexcept;

// Rows of `channels` values where value c of each row belongs to channel c (per-channel along
// the last axis): adds it to counts[c][bin_index(x, inv_width[c])] and 1 to added[c].
void bin_rows(const float* x, std::int64_t rows, std::int64_t channels, const float* inv_width,
              int bins, double* const* counts, double* added) noexcept;

}  // namespace qforge::calibration::kernels
