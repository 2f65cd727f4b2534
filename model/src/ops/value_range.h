// The range dynamic quantization needs of a float tensor, computed by the step that writes the
// tensor while its values are still in cache (model::ValueRange, executor.h): the quantized
// MatMul after it then skips its own min/max pass over the tensor.
//
// The range is what dynamic_quantize_linear computes: it starts at [0, 0] and widens by every
// non-NaN value (an infinite one included, which the quantization then refuses as before).
// Min and max are exact and order-free, so tasks merge their partial ranges in any order and
// the result equals a single pass over the tensor, whatever the thread count.
#pragma once

#include <atomic>
#include <cstdint>

#include "qforge/model/executor.h"

namespace qforge::model::ops {

// [lo, hi] widened by y[0..n): NaN fails both comparisons and is left out.
void widen_range(const float* y, std::int64_t n, float& lo, float& hi);
// The same over `rows` rows of `cols` values, row r at y + r * stride: one fold of the vector
// lanes for all of them (a head's slice of attention's merged output is rows of 32 values).
void widen_range_rows(const float* y, std::int64_t rows, std::int64_t cols, std::int64_t stride,
                      float& lo, float& hi);

// Shared by one step's tasks: each widens a local range over what it wrote, then merges it
// here once.
class RangeSink {
 public:
  void merge(float lo, float hi) noexcept;
  ValueRange range() const noexcept {
    return ValueRange{lo_.load(std::memory_order_relaxed), hi_.load(std::memory_order_relaxed),
                      true};
  }

 private:
  std::atomic<float> lo_{0.0f}, hi_{0.0f};
};

}  // namespace qforge::model::ops
