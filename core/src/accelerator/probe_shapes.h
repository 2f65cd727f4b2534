// How probes shrink a real descriptor (probe_desc): per level, caps on the outer, last
// (contiguous / K), M and N extents; block-wise schemes keep a few whole blocks plus a partial
// one along the blocked axis.
#pragma once

#include <algorithm>
#include <cstdint>

#include "qforge/params.h"
#include "qforge/shape.h"

namespace qforge::accel {

struct Caps {
  std::int64_t outer, last, m, n;
};

inline Caps caps_for(int level, std::int64_t block) {
  if (level == 0) return {3, block > 0 ? 2 * block + 5 : 37, 5, 7};
  return {17, block > 0 ? 4 * block + 9 : 263, 33, 67};
}

inline std::int64_t cap(std::int64_t d, std::int64_t c) {
  return std::max<std::int64_t>(1, std::min(d, c));
}

inline std::int64_t block_of(const QuantizationParams& p) {
  return p.scheme().granularity == Granularity::block ? p.scheme().block_size : 0;
}

inline Shape shrink(const Shape& s, const Caps& c) {
  Shape out = s;
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = cap(out[i], i + 1 == out.size() ? c.last : c.outer);
  return out;
}

inline float abs_max_scale(const QuantizationParams& p) {
  float m = 0;
  for (float s : p.scales()) m = std::max(m, s);
  return m;
}

}  // namespace qforge::accel
