#include "kernels.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

// The 8-lane types only live inside this file's inlined helpers; GCC's note that passing them
// by value would differ from an AVX build's ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace qforge::calibration::kernels {
namespace {

using f32x8 = float __attribute__((vector_size(32)));
using i32x8 = std::int32_t __attribute__((vector_size(32)));

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr std::int32_t kAbsMask = 0x7fffffff;
constexpr std::int32_t kInfBits = 0x7f800000;

inline f32x8 load8(const float* p) noexcept {
  f32x8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline f32x8 splat(float v) noexcept { return f32x8{} + v; }
inline i32x8 splat(std::int32_t v) noexcept { return i32x8{} + v; }

// -1 in the lanes that hold finite values, 0 elsewhere.
inline i32x8 finite_mask(f32x8 v) noexcept {
  return ((i32x8)v & kAbsMask) < kInfBits;  // a vector cast reinterprets the bits
}

inline bool is_finite(float v) noexcept { return std::fabs(v) <= FLT_MAX; }

// Per-lane extremes and non-finite counts over whole blocks of 16 values; the int32 lane counts
// stay far from overflow because callers pass at most kBlock values.
struct Lanes {
  f32x8 lo0 = splat(kInf), lo1 = splat(kInf), hi0 = splat(-kInf), hi1 = splat(-kInf);
  i32x8 bad0 = i32x8{}, bad1 = i32x8{};

  void step(f32x8 a, f32x8 b) noexcept {
    const i32x8 fa = finite_mask(a), fb = finite_mask(b);
    lo0 = (fa & (a < lo0)) ? a : lo0;
    lo1 = (fb & (b < lo1)) ? b : lo1;
    hi0 = (fa & (a > hi0)) ? a : hi0;
    hi1 = (fb & (b > hi1)) ? b : hi1;
    bad0 += fa + 1;  // 0 where finite (-1 + 1), 1 elsewhere
    bad1 += fb + 1;
  }
};

constexpr std::size_t kBlock = std::size_t{1} << 28;

}  // namespace

Extremes scan(const float* x, std::size_t n) noexcept {
  Extremes out{kInf, -kInf, 0};
  std::size_t i = 0;
  while (n - i >= 16) {
    const std::size_t end = i + std::min(kBlock, (n - i) / 16 * 16);
    Lanes l;
    for (; i < end; i += 16) l.step(load8(x + i), load8(x + i + 8));
    for (int k = 0; k < 8; ++k) {
      out.lo = std::min({out.lo, l.lo0[k], l.lo1[k]});
      out.hi = std::max({out.hi, l.hi0[k], l.hi1[k]});
      out.non_finite += l.bad0[k] + l.bad1[k];
    }
  }
  for (; i < n; ++i) {
    const float v = x[i];
    if (!is_finite(v)) {
      ++out.non_finite;
      continue;
    }
    out.lo = v < out.lo ? v : out.lo;
    out.hi = v > out.hi ? v : out.hi;
  }
  return out;
}

std::int64_t scan_channels(const float* x, const BatchLayout& layout, float* lo,
                           float* hi) noexcept {
  const auto channels = static_cast<std::size_t>(layout.channels);
  const auto inner = static_cast<std::size_t>(layout.inner);
  std::int64_t bad = 0;
  if (inner == 1) {
    // Channels along the last axis: an elementwise min/max of each row into the channel
    // arrays, which vectorises across channels.
    for (std::int64_t o = 0; o < layout.outer; ++o) {
      const float* row = x + static_cast<std::size_t>(o) * channels;
      for (std::size_t c = 0; c < channels; ++c) {
        const float v = row[c];
        const bool fin = is_finite(v);
        lo[c] = fin && v < lo[c] ? v : lo[c];
        hi[c] = fin && v > hi[c] ? v : hi[c];
        bad += fin ? 0 : 1;
      }
    }
    return bad;
  }
  for (std::int64_t o = 0; o < layout.outer; ++o)
    for (std::size_t c = 0; c < channels; ++c) {
      const Extremes e = scan(x + (static_cast<std::size_t>(o) * channels + c) * inner, inner);
      lo[c] = std::min(lo[c], e.lo);
      hi[c] = std::max(hi[c], e.hi);
      bad += e.non_finite;
    }
  return bad;
}

float inverse_width(float limit, int bins) noexcept {
  if (!(limit > 0.0f)) return 0.0f;
  // Clamped so that a denormal limit cannot make it inf (0 * inf would be NaN).
  return static_cast<float>(std::min(static_cast<double>(bins) / limit, double{FLT_MAX}));
}

void bin_counts(const float* x, std::size_t n, float inv_width, int bins,
                std::uint32_t* counts4) noexcept {
  const std::size_t stride = 2 * static_cast<std::size_t>(bins) + 1;
  std::uint32_t* c0 = counts4;
  std::uint32_t* c1 = c0 + stride;
  std::uint32_t* c2 = c1 + stride;
  std::uint32_t* c3 = c2 + stride;
  // Indices are computed for a chunk with vector code, then counted with scalar increments
  // (no vector scatter-add exists that handles repeated bins).
  constexpr std::size_t kChunk = 512;
  alignas(32) std::int32_t idx[kChunk];
  const f32x8 inv = splat(inv_width);
  const f32x8 top = splat(static_cast<float>(bins - 1));
  const i32x8 side = splat(bins);
  const i32x8 trash = splat(2 * bins);
  for (std::size_t base = 0; base < n; base += kChunk) {
    const std::size_t m = std::min(kChunk, n - base);
    const float* p = x + base;
    std::size_t k = 0;
    for (; k + 8 <= m; k += 8) {
      const f32x8 v = load8(p + k);
      const i32x8 bits = (i32x8)v;
      const i32x8 mag = bits & kAbsMask;
      const i32x8 fin = mag < kInfBits;
      f32x8 f = (f32x8)mag * inv;  // |x|
      // Non-finite lanes are replaced before the conversion (converting NaN or inf to int is
      // undefined); they are sent to the trash counter below.
      f = (fin & (f < top)) ? f : top;
      i32x8 j = __builtin_convertvector(f, i32x8) + ((v >= f32x8{}) & side);
      j = fin ? j : trash;
      std::memcpy(idx + k, &j, sizeof j);
    }
    for (; k < m; ++k) idx[k] = is_finite(p[k]) ? bin_index(p[k], inv_width, bins) : 2 * bins;
    std::size_t i = 0;
    for (; i + 4 <= m; i += 4) {
      ++c0[idx[i]];
      ++c1[idx[i + 1]];
      ++c2[idx[i + 2]];
      ++c3[idx[i + 3]];
    }
    for (; i < m; ++i) ++c0[idx[i]];
  }
}

std::size_t bin_run(const float* x, std::size_t n, float inv_width, int bins,
                    double* counts) noexcept {
  std::size_t added = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (is_finite(x[i])) {
      counts[bin_index(x[i], inv_width, bins)] += 1.0;
      ++added;
    }
  return added;
}

void bin_rows(const float* x, std::int64_t rows, std::int64_t channels, const float* inv_width,
              int bins, double* const* counts, double* added) noexcept {
  const auto nc = static_cast<std::size_t>(channels);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + static_cast<std::size_t>(r) * nc;
    for (std::size_t c = 0; c < nc; ++c)
      if (is_finite(row[c])) {
        counts[c][bin_index(row[c], inv_width[c], bins)] += 1.0;
        added[c] += 1.0;
      }
  }
}

}  // namespace qforge::calibration::kernels
