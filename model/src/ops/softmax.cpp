// Softmax and LogSoftmax. Before version 13 the input is seen as 2-D [prod(:axis), prod(axis:)]
// and normalised along the second axis; from 13 along the single axis `axis`.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/fast_exp.h"
#include "ops/fused.h"
#include "ops/kernel.h"
#include "ops/parallel.h"
#include "ops/spatial.h"

namespace qforge::model::ops {
namespace {

std::int64_t default_axis(const Node& n) { return n.since_version >= 13 ? -1 : 1; }

std::vector<TensorType> infer_softmax(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  const auto rank = static_cast<std::int64_t>(in[0].type->shape.size());
  normalize_axis(n, n.attr_int_or("axis", default_axis(n)), std::max<std::int64_t>(rank, 1));
  return {*in[0].type};
}

// The row kernels are compiled three times (AVX-512, x86-64-v3 = AVX2 with FMA, baseline
// x86-64), picked once at load time through an ifunc. The exp's multiply-adds are explicit
// std::fma calls (ops/fast_exp.h), exact in every clone: vfmadd in the first two, a libm call in
// the baseline one. Everything else must not be contracted, so this file is compiled with
// -ffp-contract=off (model/CMakeLists.txt): every clone computes the same operations in the same
// order and gives the same bits.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QFORGE_SOFTMAX_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define QFORGE_SOFTMAX_CLONES
#endif

// 16 floats at any float's address; the maximum is taken lane-wise over them (a select, which
// the compiler does not make of the scalar loop), then across the lanes: max is exact and
// order-free, so the lane count does not change the result.
typedef float Lanes16 __attribute__((vector_size(64)));
typedef float UnalignedLanes16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef float Lanes8 __attribute__((vector_size(32)));
typedef float UnalignedLanes8 __attribute__((vector_size(32), aligned(4), may_alias));

[[gnu::always_inline]] inline float row_max(const float* xr, std::int64_t len) {
  constexpr std::int64_t V = 16;
  const std::int64_t whole = len / V * V;
  const float ninf = -std::numeric_limits<float>::infinity();
  Lanes16 m = {ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf,
               ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf};
  for (std::int64_t j = 0; j < whole; j += V) {
    const Lanes16 v = *reinterpret_cast<const UnalignedLanes16*>(xr + j);
    m = v > m ? v : m;
  }
  // Across the lanes as a tree (halves, quarters, ...): independent maxima, not a chain of 16.
  float h[V];
  for (std::int64_t l = 0; l < V; ++l) h[l] = m[l];
  for (std::int64_t w = V / 2; w > 0; w /= 2)
    for (std::int64_t l = 0; l < w; ++l) h[l] = h[l + w] > h[l] ? h[l + w] : h[l];
  float mx = h[0];
  for (std::int64_t j = whole; j < len; ++j) mx = xr[j] > mx ? xr[j] : mx;
  return mx;
}

// Softmax of one contiguous row of `len` (the axis is the last one, as in attention): the sum
// over eight lanes in a fixed order, so the loops vectorise and every row's result is the same
// whichever thread or clone computes it.
[[gnu::always_inline]] inline void softmax_row(const float* xr, float* yr, std::int64_t len,
                                               bool log) {
  constexpr std::int64_t L = 8;
  const std::int64_t whole = len / L * L;
  const float mx = row_max(xr, len);
  for (std::int64_t j = 0; j < len; ++j) yr[j] = fast_exp_nonpositive(xr[j] - mx);
  // Lane l sums yr[l], yr[l + 8], ... in order; as an explicit vector, since GCC turns the
  // scalar form of this loop into a chain of single-lane adds.
  Lanes8 s = {};
  for (std::int64_t j = 0; j < whole; j += L)
    s += *reinterpret_cast<const UnalignedLanes8*>(yr + j);
  float sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (std::int64_t j = whole; j < len; ++j) sum += yr[j];
  if (log) {
    const float ls = std::log(sum);
    for (std::int64_t j = 0; j < len; ++j) yr[j] = xr[j] - mx - ls;
  } else {
    const float inv = 1.0f / sum;
    for (std::int64_t j = 0; j < len; ++j) yr[j] *= inv;
  }
}

// softmax_row (not log) for R rows at once, phase by phase: the maximum of every row, then
// every row's exp, then the sums, then the normalisation. Within a row each phase waits for the
// one before (the exp for the maximum, the scale for the sum), a chain longer than the row's
// arithmetic at attention's 128 columns; R rows side by side give the core R independent chains.
// Each row's operations are softmax_row's, in its order.
template <int R>
[[gnu::always_inline]] inline void softmax_row_block(const float* const* xr, float* const* yr,
                                                     std::int64_t len) {
  constexpr std::int64_t V = 16, L = 8;
  const std::int64_t whole = len / V * V, whole8 = len / L * L;
  const float ninf = -std::numeric_limits<float>::infinity();
  Lanes16 m[R];
  for (int k = 0; k < R; ++k)
    m[k] = Lanes16{ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf,
                   ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf};
  for (std::int64_t j = 0; j < whole; j += V)
    for (int k = 0; k < R; ++k) {
      const Lanes16 v = *reinterpret_cast<const UnalignedLanes16*>(xr[k] + j);
      m[k] = v > m[k] ? v : m[k];
    }
  float mx[R];
  for (int k = 0; k < R; ++k) {
    // row_max's fold of the lanes, then its tail.
    float h[V];
    for (std::int64_t l = 0; l < V; ++l) h[l] = m[k][l];
    for (std::int64_t w = V / 2; w > 0; w /= 2)
      for (std::int64_t l = 0; l < w; ++l) h[l] = h[l + w] > h[l] ? h[l + w] : h[l];
    mx[k] = h[0];
    for (std::int64_t j = whole; j < len; ++j) mx[k] = xr[k][j] > mx[k] ? xr[k][j] : mx[k];
  }
  for (int k = 0; k < R; ++k) {
    const float* xk = xr[k];
    float* yk = yr[k];
    const float mk = mx[k];
    for (std::int64_t j = 0; j < len; ++j) yk[j] = fast_exp_nonpositive(xk[j] - mk);
  }
  Lanes8 s[R] = {};
  for (std::int64_t j = 0; j < whole8; j += L)
    for (int k = 0; k < R; ++k) s[k] += *reinterpret_cast<const UnalignedLanes8*>(yr[k] + j);
  for (int k = 0; k < R; ++k) {
    float sum =
        ((s[k][0] + s[k][1]) + (s[k][2] + s[k][3])) + ((s[k][4] + s[k][5]) + (s[k][6] + s[k][7]));
    for (std::int64_t j = whole8; j < len; ++j) sum += yr[k][j];
    const float inv = 1.0f / sum;
    float* yk = yr[k];
    for (std::int64_t j = 0; j < len; ++j) yk[j] *= inv;
  }
}

QFORGE_SOFTMAX_CLONES void softmax_rows(const float* x, float* y, std::int64_t begin,
                                        std::int64_t end, std::int64_t len, bool log) {
  for (std::int64_t row = begin; row < end; ++row)
    softmax_row(x + row * len, y + row * len, len, log);
}

// Lines [begin, end) of a Softmax whose axis is not the last one (elements `inner` apart).
QFORGE_SOFTMAX_CLONES void softmax_strided_lines(const float* x, float* y, std::int64_t begin,
                                                 std::int64_t end, std::int64_t len,
                                                 std::int64_t inner, bool log) {
  for (std::int64_t line = begin; line < end; ++line) {
    const std::int64_t o = line / inner, i = line % inner;
    const float* xp = x + o * len * inner + i;
    float* yp = y + o * len * inner + i;
    float mx = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < len; ++j) mx = xp[j * inner] > mx ? xp[j * inner] : mx;
    float sum = 0.0f;
    for (std::int64_t j = 0; j < len; ++j) {
      const float e = fast_exp_nonpositive(xp[j * inner] - mx);
      yp[j * inner] = e;
      sum += e;
    }
    if (log) {
      const float ls = std::log(sum);
      for (std::int64_t j = 0; j < len; ++j) yp[j * inner] = xp[j * inner] - mx - ls;
    } else {
      const float inv = 1.0f / sum;
      for (std::int64_t j = 0; j < len; ++j) yp[j * inner] *= inv;
    }
  }
}

void run_softmax(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape& s = in[0]->shape();
  const auto rank = static_cast<std::int64_t>(s.size());
  const std::int64_t axis =
      normalize_axis(n, n.attr_int_or("axis", default_axis(n)), std::max<std::int64_t>(rank, 1));
  // outer x len x inner, normalising over len with stride inner.
  std::int64_t outer = 1, len = 1, inner = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= s[d];
    else if (n.since_version < 13 || d == axis) len *= s[d];
    else inner *= s[d];
  }
  const bool log = n.op_type == "LogSoftmax";
  const float* x = in[0]->values<float>().data();
  float* y = out[0]->values<float>().data();
  // Each line is independent: split the lines across the pool, rows grouped to the grain.
  const std::int64_t grain = std::max<std::int64_t>(1, kLibmGrain / std::max<std::int64_t>(len, 1));
  if (inner == 1) {
    parallel_for(outer, grain, [&](std::int64_t begin, std::int64_t end) {
      softmax_rows(x, y, begin, end, len, log);
    });
    return;
  }
  parallel_for(outer * inner, grain, [&](std::int64_t begin, std::int64_t end) {
    softmax_strided_lines(x, y, begin, end, len, inner, log);
  });
}

}  // namespace

void masked_softmax(const MaskedSoftmax& s, const float* x, float* y, std::int64_t rows,
                    std::int64_t len) {
  const std::int64_t grain = std::max<std::int64_t>(1, kLibmGrain / std::max<std::int64_t>(len, 1));
  parallel_for(rows, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      std::int64_t rest = row, offset = 0;
      for (int d = s.outer_rank - 1; d >= 0; --d) {
        offset += rest % s.outer_shape[d] * s.mask_strides[d];
        rest /= s.outer_shape[d];
      }
      masked_softmax_row(x + row * len, y + row * len, s.mask + offset, s.mask_step, len,
                         s.has_divisor, s.divisor);
    }
  });
}

QFORGE_SOFTMAX_CLONES void masked_softmax_rows(const float* x, float* y, std::int64_t rows,
                                               std::int64_t len, const float* mask,
                                               std::int64_t mask_row_step, std::int64_t mask_step,
                                               bool has_divisor, float divisor) {
  // The Div and the Add as their kernels compute them, into the output row, then the Softmax of
  // that row in place (softmax_row reads each element before writing it). A contiguous mask
  // (step 1) and one broadcast along the row (step 0) get loops of their own, which vectorise.
  // Four rows at a time through softmax_row_block, the rest one by one.
  constexpr int R = 4;
  const bool pre = has_divisor || mask;
  for (std::int64_t row0 = 0; row0 < rows; row0 += R) {
    const std::int64_t n = std::min<std::int64_t>(R, rows - row0);
    for (std::int64_t row = row0; row < row0 + n; ++row) {
      const float* xr = x + row * len;
      float* yr = y + row * len;
      const float* mr = mask ? mask + row * mask_row_step : nullptr;
      if (has_divisor && mr && mask_step == 1)
        for (std::int64_t j = 0; j < len; ++j) yr[j] = xr[j] / divisor + mr[j];
      else if (has_divisor && mr)
        for (std::int64_t j = 0; j < len; ++j) yr[j] = xr[j] / divisor + mr[j * mask_step];
      else if (has_divisor)
        for (std::int64_t j = 0; j < len; ++j) yr[j] = xr[j] / divisor;
      else if (mr && mask_step == 1)
        for (std::int64_t j = 0; j < len; ++j) yr[j] = xr[j] + mr[j];
      else if (mr)
        for (std::int64_t j = 0; j < len; ++j) yr[j] = xr[j] + mr[j * mask_step];
    }
    const float* src = pre ? y : x;
    if (n == R) {
      const float* xs[R];
      float* ys[R];
      for (std::int64_t k = 0; k < R; ++k) {
        xs[k] = src + (row0 + k) * len;
        ys[k] = y + (row0 + k) * len;
      }
      softmax_row_block<R>(xs, ys, len);
    } else {
      for (std::int64_t row = row0; row < row0 + n; ++row)
        softmax_row(src + row * len, y + row * len, len, false);
    }
  }
}

void masked_softmax_row(const float* x, float* y, const float* mask, std::int64_t mask_step,
                        std::int64_t len, bool has_divisor, float divisor) {
  masked_softmax_rows(x, y, 1, len, mask, 0, mask_step, has_divisor, divisor);
}

void register_softmax(KernelRegistry& r) {
  r.add({"Softmax", {1, 11, 13}, {"axis"}, nullptr, infer_softmax, run_softmax});
  r.add({"LogSoftmax", {1, 11, 13}, {"axis"}, nullptr, infer_softmax, run_softmax});
}

}  // namespace qforge::model::ops
