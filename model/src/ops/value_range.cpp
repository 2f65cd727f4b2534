// ops/value_range.h: the range pass of a step's output, on data the step has just written.
#include "ops/value_range.h"

#include "ops/spatial.h"

namespace qforge::model::ops {

// Sixteen independent lanes, each updated with a compare and select (v < l ? v : l is exactly
// minps(v, l), NaN v keeping l), so the loop vectorises without -ffast-math; the lanes are
// folded at the end. Signed zeros cannot enter: the range starts at +0.0 and -0.0 compares
// equal to it.
QFORGE_MODEL_VECTOR_CLONES void widen_range(const float* y, std::int64_t n, float& lo,
                                            float& hi) {
  constexpr std::int64_t L = 16;
  float l[L], h[L];
  for (std::int64_t k = 0; k < L; ++k) {
    l[k] = lo;
    h[k] = hi;
  }
  const std::int64_t whole = n / L * L;
  for (std::int64_t i = 0; i < whole; i += L)
    for (std::int64_t k = 0; k < L; ++k) {
      const float v = y[i + k];
      l[k] = v < l[k] ? v : l[k];
      h[k] = v > h[k] ? v : h[k];
    }
  for (std::int64_t i = whole; i < n; ++i) {
    const float v = y[i];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  for (std::int64_t k = 0; k < L; ++k) {
    lo = l[k] < lo ? l[k] : lo;
    hi = h[k] > hi ? h[k] : hi;
  }
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
