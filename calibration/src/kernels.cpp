#include "kernels.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace qforge::calibration::kernels {
namespace {

// 4 lanes = one SSE2 / NEON register, the baseline of x86-64 and AArch64; wider generic vectors
// are lowered to scalar code when the target lacks them. Several accumulators give the ILP.
using f32x4 = float __attribute__((vector_size(16)));
using i32x4 = std::int32_t __attribute__((vector_size(16)));

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr std::int32_t kAbsMask = 0x7fffffff;
constexpr std::int32_t kInfBits = 0x7f800000;

inline f32x4 load4(const float* p) noexcept {
  f32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline f32x4 splat(float v) noexcept { return f32x4{} + v; }
inline i32x4 splat(std::int32_t v) noexcept { return i32x4{} + v; }

inline bool is_finite(float v) noexcept { return std::fabs(v) <= FLT_MAX; }

// Exact scalar scan: the fallback for blocks that hold an infinity, and for tails.
void scan_scalar(const float* x, std::size_t n, Extremes& out) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (!is_finite(v)) {
      ++out.non_finite;
      continue;
    }
    out.lo = v < out.lo ? v : out.lo;
    out.hi = v > out.hi ? v : out.hi;
  }
}

// Blocks of the fast scan: small enough to re-scan cheaply when an infinity shows up.
constexpr std::size_t kScanBlock = 4096;

}  // namespace

// The hot loop is three vector operations per four values: `a < lo ? a : lo` (and its max
// twin), which is exactly SSE's minps / maxps and never takes a NaN from `a` (the comparison is
// false), and a NaN count (a != a). An infinity would win the min or max: a block whose
// extremes come out infinite is scanned again exactly (it also counts the infinities).
Extremes scan(const float* x, std::size_t n) noexcept {
  Extremes out{kInf, -kInf, 0};
  f32x4 lo[4], hi[4];
  for (int k = 0; k < 4; ++k) {
    lo[k] = splat(kInf);
    hi[k] = splat(-kInf);
  }
  std::size_t i = 0;
  for (; n - i >= kScanBlock; i += kScanBlock) {
    const float* p = x + i;
    f32x4 blo[4], bhi[4];
    i32x4 nan[4];
    for (int k = 0; k < 4; ++k) {
      blo[k] = splat(kInf);
      bhi[k] = splat(-kInf);
      nan[k] = i32x4{};
    }
    for (std::size_t j = 0; j < kScanBlock; j += 16)
      for (int k = 0; k < 4; ++k) {
        const f32x4 a = load4(p + j + 4 * static_cast<std::size_t>(k));
        blo[k] = a < blo[k] ? a : blo[k];
        bhi[k] = a > bhi[k] ? a : bhi[k];
        nan[k] -= (a != a);  // -1 in NaN lanes
      }
    i32x4 infinite = i32x4{};
    for (int k = 0; k < 4; ++k) infinite |= (blo[k] == splat(-kInf)) | (bhi[k] == splat(kInf));
    if ((infinite[0] | infinite[1] | infinite[2] | infinite[3]) != 0) {
      scan_scalar(p, kScanBlock, out);
      continue;
    }
    for (int k = 0; k < 4; ++k) {
      lo[k] = blo[k] < lo[k] ? blo[k] : lo[k];
      hi[k] = bhi[k] > hi[k] ? bhi[k] : hi[k];
      for (int lane = 0; lane < 4; ++lane) out.non_finite += nan[k][lane];
    }
  }
  for (int k = 0; k < 4; ++k)
    for (int lane = 0; lane < 4; ++lane) {
      out.lo = std::min(out.lo, lo[k][lane]);
      out.hi = std::max(out.hi, hi[k][lane]);
    }
  scan_scalar(x + i, n - i, out);
  return out;
}

std::int64_t scan_channels(const float* x, const BatchLayout& layout, float* lo,
                           float* hi) noexcept {
  const auto channels = static_cast<std::size_t>(layout.channels);
  const auto inner = static_cast<std::size_t>(layout.inner);
  std::int64_t bad = 0;
  if (inner == 1) {
    // Channels along the last axis: an elementwise min/max of each row into the channel
    // arrays, which vectorises across channels. A row is first checked for non-finite values
    // (it stays in L1 for the second look); only rows that hold one take the masked loop.
    for (std::int64_t o = 0; o < layout.outer; ++o) {
      const float* row = x + static_cast<std::size_t>(o) * channels;
      std::int32_t row_bad = 0;
      for (std::size_t c = 0; c < channels; ++c) row_bad += is_finite(row[c]) ? 0 : 1;
      if (row_bad == 0) {
        for (std::size_t c = 0; c < channels; ++c) {
          lo[c] = row[c] < lo[c] ? row[c] : lo[c];
          hi[c] = row[c] > hi[c] ? row[c] : hi[c];
        }
        continue;
      }
      bad += row_bad;
      for (std::size_t c = 0; c < channels; ++c) {
        const float v = row[c];
        const bool fin = is_finite(v);
        lo[c] = fin && v < lo[c] ? v : lo[c];
        hi[c] = fin && v > hi[c] ? v : hi[c];
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

void bin_counts(const float* x, std::size_t n, float inv_width, int bins, bool all_finite,
                std::uint16_t* counts4) noexcept {
  const std::size_t stride = 2 * static_cast<std::size_t>(bins) + 1;
  std::uint16_t* c0 = counts4;
  std::uint16_t* c1 = c0 + stride;
  std::uint16_t* c2 = c1 + stride;
  std::uint16_t* c3 = c2 + stride;
  // Indices are computed for a chunk with vector code, then counted with scalar increments
  // (no vector scatter-add exists that handles repeated bins). Computing and counting in one
  // loop measured slower: lane extraction costs more than a store and a reload.
  constexpr std::size_t kChunk = 512;
  alignas(16) std::int32_t idx[kChunk];
  const f32x4 inv = splat(inv_width);
  const f32x4 top = splat(static_cast<float>(bins - 1));
  const i32x4 side = splat(bins);
  const i32x4 trash = splat(2 * bins);
  for (std::size_t base = 0; base < n; base += kChunk) {
    const std::size_t m = std::min(kChunk, n - base);
    const float* p = x + base;
    std::size_t k = 0;
    if (all_finite) {
      for (; k + 4 <= m; k += 4) {
        const f32x4 v = load4(p + k);
        f32x4 f = (f32x4)((i32x4)v & kAbsMask) * inv;  // |x| / w (vector casts reinterpret)
        f = f < top ? f : top;                         // the top edge goes to the last bin
        // + bins for x >= 0 (so -0.0 counts as positive, as bin_index does).
        const i32x4 j = __builtin_convertvector(f, i32x4) + ((v >= f32x4{}) & side);
        std::memcpy(idx + k, &j, sizeof j);
      }
    } else {
      for (; k + 4 <= m; k += 4) {
        const f32x4 v = load4(p + k);
        const i32x4 mag = (i32x4)v & kAbsMask;
        const i32x4 fin = mag < kInfBits;
        f32x4 f = (f32x4)mag * inv;
        // Non-finite lanes are replaced before the conversion (converting NaN or inf to int is
        // undefined); they are sent to the trash counter below.
        f = (fin & (f < top)) ? f : top;
        i32x4 j = __builtin_convertvector(f, i32x4) + ((v >= f32x4{}) & side);
        j = fin ? j : trash;
        std::memcpy(idx + k, &j, sizeof j);
      }
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

namespace {

// Vector bin indices of n finite values (n a multiple of 4) with one inverse width per value
// group: `inv` advances by 4 floats per 4 values when `per_value` (rows of channels), else stays.
void finite_indices(const float* x, std::size_t n, const float* inv, bool per_value, int bins,
                    std::int32_t* idx) noexcept {
  const f32x4 top = splat(static_cast<float>(bins - 1));
  const i32x4 side = splat(bins);
  f32x4 w = splat(inv[0]);
  for (std::size_t k = 0; k + 4 <= n; k += 4) {
    const f32x4 v = load4(x + k);
    if (per_value) w = load4(inv + k);
    f32x4 f = (f32x4)((i32x4)v & kAbsMask) * w;
    f = f < top ? f : top;
    const i32x4 j = __builtin_convertvector(f, i32x4) + ((v >= f32x4{}) & side);
    std::memcpy(idx + k, &j, sizeof j);
  }
}

}  // namespace

void bin_run_finite(const float* x, std::size_t n, float inv_width, int bins,
                    double* counts) noexcept {
  constexpr std::size_t kChunk = 512;
  alignas(16) std::int32_t idx[kChunk];
  const std::size_t vec_end = n / 4 * 4;
  std::size_t base = 0;
  while (base < vec_end) {
    const std::size_t m = std::min(kChunk, vec_end - base);
    finite_indices(x + base, m, &inv_width, false, bins, idx);
    for (std::size_t i = 0; i < m; ++i) counts[idx[i]] += 1.0;
    base += m;
  }
  for (; base < n; ++base) counts[bin_index(x[base], inv_width, bins)] += 1.0;
}

void bin_rows_finite(const float* x, std::int64_t rows, std::int64_t channels,
                     const float* inv_width, int bins, double* const* counts) noexcept {
  const auto nc = static_cast<std::size_t>(channels);
  const std::size_t vec = nc / 4 * 4;
  std::vector<std::int32_t> idx(nc);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + static_cast<std::size_t>(r) * nc;
    finite_indices(row, vec, inv_width, true, bins, idx.data());
    for (std::size_t c = vec; c < nc; ++c) idx[c] = bin_index(row[c], inv_width[c], bins);
    for (std::size_t c = 0; c < nc; ++c) counts[c][idx[c]] += 1.0;
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
