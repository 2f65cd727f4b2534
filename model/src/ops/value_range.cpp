// ops/value_range.h: the range pass of a step's output, on data the step has just written.
#include "ops/value_range.h"

#include "ops/spatial.h"

namespace qforge::model::ops {

// Two vectors of eight lanes, each lane updated with a compare and select (v < l ? v : l, NaN v
// keeping l), spelled with GCC's vector types: GCC leaves the same loop over plain arrays
// scalar without -ffast-math. Lanes are folded at the end; min and max are exact, so the
// order does not matter. Signed zeros cannot enter: the range starts at +0.0 and -0.0
// compares equal to it.
typedef float Lanes __attribute__((vector_size(32)));
typedef float UnalignedLanes __attribute__((vector_size(32), aligned(4), may_alias));
constexpr std::int64_t kLanes = 8;

QFORGE_MODEL_VECTOR_CLONES void widen_range_rows(const float* y, std::int64_t rows,
                                                 std::int64_t cols, std::int64_t stride, float& lo,
                                                 float& hi) {
  Lanes l0 = Lanes{} + lo, l1 = l0, h0 = Lanes{} + hi, h1 = h0;
  const std::int64_t whole = cols / (2 * kLanes) * (2 * kLanes);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = y + r * stride;
    for (std::int64_t i = 0; i < whole; i += 2 * kLanes) {
      const Lanes v0 = *reinterpret_cast<const UnalignedLanes*>(row + i);
      const Lanes v1 = *reinterpret_cast<const UnalignedLanes*>(row + i + kLanes);
      l0 = v0 < l0 ? v0 : l0;
      l1 = v1 < l1 ? v1 : l1;
      h0 = v0 > h0 ? v0 : h0;
      h1 = v1 > h1 ? v1 : h1;
    }
    for (std::int64_t i = whole; i < cols; ++i) {
      const float v = row[i];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
  }
  for (std::int64_t k = 0; k < kLanes; ++k) {
    lo = l0[k] < lo ? l0[k] : lo;
    lo = l1[k] < lo ? l1[k] : lo;
    hi = h0[k] > hi ? h0[k] : hi;
    hi = h1[k] > hi ? h1[k] : hi;
  }
}

void widen_range(const float* y, std::int64_t n, float& lo, float& hi) {
  widen_range_rows(y, 1, n, n, lo, hi);
}

void RangeSink::merge(float lo, float hi) noexcept {
  float seen = lo_.load(std::memory_order_relaxed);
  while (lo < seen && !lo_.compare_exchange_weak(seen, lo, std::memory_order_relaxed)) {
  }
  seen = hi_.load(std::memory_order_relaxed);
  while (hi > seen && !hi_.compare_exchange_weak(seen, hi, std::memory_order_relaxed)) {
  }
}

}  // namespace qforge::model::ops
