// Scaled dot-product attention per (batch, head) (ops/fused.h): the unfused graph writes the
// head-split copies of Q, K and V, the [batch, heads, q_len, kv_len] scores three times (MatMul,
// Div and mask Add, Softmax) and the merge copy of the context; here each head's scores
// (q_len x kv_len floats, 64 KiB for 128 tokens) stay in a per-thread buffer in cache between
// the two products, and Q, K, V and the output are touched once each.
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ops/fused.h"
#include "ops/parallel.h"
#include "ops/parallel_blas.h"
#include "ops/value_range.h"
#include "qforge/error.h"

namespace qforge::model::ops {
namespace {

// The products without BLAS: blocks of R output rows x C vectors of 16 columns whose
// accumulators are vector values (registers) over the whole sum, each loaded operand used by
// the R rows. The block is as large as the registers allow, so that the block's independent
// accumulator chains hide the multiply-add's latency: 8 x 32 with AVX-512 (16 of its 32 zmm
// registers), 4 x 16 with AVX2 (8 of its 16 ymm). A head's keys are transposed once into the
// scratch so the scores read them as rows. Every output is summed in index order, so every
// blocking and thread count gives the same bits; the multiply-add is a * b + c as written,
// which GCC contracts into one FMA (rounded once) where the target has FMA (the AVX-512
// version; C++ builds allow contraction) and computes as a multiply then an add in the AVX2
// and baseline versions (docs/MODEL.md states the tolerance this gives).
typedef float Lanes __attribute__((vector_size(64)));
// The same lanes at any float's address (unaligned loads and stores).
typedef float UnalignedLanes __attribute__((vector_size(64), aligned(4), may_alias));
constexpr std::int64_t kLanes = 16;
#define QFORGE_LANES_AT(p) (*reinterpret_cast<const UnalignedLanes*>(p))
#define QFORGE_LANES_TO(p) (*reinterpret_cast<UnalignedLanes*>(p))

// The range of what a product wrote (ops/value_range.h's rule: v < lo ? v : lo, so NaN is left
// out and -0.0 never enters), widened from the registers as the blocks are stored: the context
// product's output needs no pass of its own. Lane-wise, then folded: min and max are exact.
struct RangeLanes {
  Lanes lo = {}, hi = {};
  float lo_tail = 0.0f, hi_tail = 0.0f;  // the single columns'
  void widen(float& l, float& h) const {
    for (std::int64_t k = 0; k < kLanes; ++k) {
      l = lo[k] < l ? lo[k] : l;
      h = hi[k] > h ? hi[k] : h;
    }
    l = lo_tail < l ? lo_tail : l;
    h = hi_tail > h ? hi_tail : h;
  }
};

// The cache lines of the next head's rows, asked into L2 a few at a time between the blocks of
// this head's products. A head's rows lie a whole [heads * depth] row apart, a stride the
// hardware's prefetchers do not follow, so without this every head waited on its lines from L3:
// in the keys' transpose, the values' copy, the first blocks of the scores (the queries) and the
// context's stores (its output). Asked for all at once, the requests stalled the core on its
// few dozen outstanding misses instead of overlapping the products' multiply-adds. Prefetches
// never fault and change no value.
class NextHeadLines {
 public:
  // Rows [0, rows) of `width` floats at p, `stride` floats apart.
  void add(const float* p, std::int64_t stride, std::int64_t rows, std::int64_t width) {
    if (rows == 0 || width == 0 || count_ == kRegions) return;
    const auto first = reinterpret_cast<std::uintptr_t>(p);
    regions_[count_++] = {first, stride * 4, rows, width * 4};
    // Every row starts at the first one's offset in its line when the stride is whole lines;
    // otherwise a row may take one line more.
    const std::int64_t first_row = static_cast<std::int64_t>(
        ((first + static_cast<std::uintptr_t>(width * 4) - 1) >> 6) - (first >> 6) + 1);
    lines_ += rows * (stride * 4 % 64 == 0 ? first_row : (width * 4 + 63) / 64 + 1);
  }
  // Spreads the lines over `work` units of the products (one output vector's multiply-add): a
  // block asks for its share after its units.
  void spread(std::int64_t work) { work_ = std::max<std::int64_t>(work, 1); }
  void step(std::int64_t units) {
    owed_ += units * lines_;
    const std::int64_t n = owed_ / work_;
    owed_ -= n * work_;
    issue(n);
  }
  // The lines not asked for yet.
  void rest() { issue(lines_); }

 private:
  void issue(std::int64_t n) {
    for (; n > 0 && region_ < count_; --n) {
      const Region& r = regions_[region_];
      const std::uintptr_t row = r.first + static_cast<std::uintptr_t>(row_ * r.stride);
      const std::uintptr_t line = (row & ~std::uintptr_t{63}) + static_cast<std::uintptr_t>(line_);
      __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 2);  // into L2
      line_ += 64;
      if (line >= ((row + static_cast<std::uintptr_t>(r.bytes) - 1) & ~std::uintptr_t{63})) {
        line_ = 0;
        if (++row_ == r.rows) {
          row_ = 0;
          ++region_;
        }
      }
    }
  }
  struct Region {
    std::uintptr_t first;
    std::int64_t stride, rows, bytes;
  };
  static constexpr int kRegions = 4;
  Region regions_[kRegions] = {};
  int count_ = 0, region_ = 0;
  std::int64_t row_ = 0, line_ = 0, lines_ = 0, work_ = 1, owed_ = 0;
};

// c[r, j] for r < R, j < C * kLanes: one block, accumulators in registers (the loops over r
// and cc have constant trip counts and are unrolled); with Range, its values widen *range.
template <int R, int C, bool Range>
[[gnu::always_inline]] inline void product_block(const float* a, std::int64_t lda, const float* b,
                                                 std::int64_t ldb, float* c, std::int64_t ldc,
                                                 std::int64_t len, RangeLanes* range) {
  Lanes acc[R][C] = {};
  for (std::int64_t t = 0; t < len; ++t) {
    Lanes bt[C];
    for (int cc = 0; cc < C; ++cc) bt[cc] = QFORGE_LANES_AT(b + t * ldb + cc * kLanes);
    for (int r = 0; r < R; ++r) {
      const float ar = a[r * lda + t];
      for (int cc = 0; cc < C; ++cc) acc[r][cc] += ar * bt[cc];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int cc = 0; cc < C; ++cc) QFORGE_LANES_TO(c + r * ldc + cc * kLanes) = acc[r][cc];
  if constexpr (Range) {
    Lanes lo = range->lo, hi = range->hi;
    for (int r = 0; r < R; ++r)
      for (int cc = 0; cc < C; ++cc) {
        lo = acc[r][cc] < lo ? acc[r][cc] : lo;
        hi = acc[r][cc] > hi ? acc[r][cc] : hi;
      }
    range->lo = lo;
    range->hi = hi;
  }
}

// The n < R rows left under the blocks of R: one block of n rows, n a run-time value.
template <int R, int C, bool Range>
[[gnu::always_inline]] inline void product_block_rows_left(std::int64_t n, const float* a,
                                                           std::int64_t lda, const float* b,
                                                           std::int64_t ldb, float* c,
                                                           std::int64_t ldc, std::int64_t len,
                                                           RangeLanes* range) {
  if constexpr (R > 1) {
    if (n == R - 1) product_block<R - 1, C, Range>(a, lda, b, ldb, c, ldc, len, range);
    else product_block_rows_left<R - 1, C, Range>(n, a, lda, b, ldb, c, ldc, len, range);
  }
}

// c[i, j] = sum_t a[i * lda + t] * b[t * ldb + j] for i < rows, j < cols, t < len: both
// products (scores: a = q's rows, b = the transposed keys; context: a = the probabilities,
// b = v's rows). Blocks of R x C vectors, then of R x 1 vector for the columns left; the rows
// left under them in one block of fewer rows; then single columns. With Range, what it writes
// widens *range; with `lines`, each block asks for a few of them.
template <int R, int C, bool Range>
[[gnu::always_inline]] inline void product_rows_blocked(const float* a, std::int64_t lda,
                                                        const float* b, std::int64_t ldb, float* c,
                                                        std::int64_t ldc, std::int64_t rows,
                                                        std::int64_t cols, std::int64_t len,
                                                        RangeLanes* range, NextHeadLines* lines) {
  constexpr std::int64_t wide = C * kLanes;
  const std::int64_t wide_cols = cols / wide * wide, whole_cols = cols / kLanes * kLanes;
  const std::int64_t whole_rows = rows / R * R, left = rows - whole_rows;
  for (std::int64_t i = 0; i < whole_rows; i += R) {
    for (std::int64_t j = 0; j < wide_cols; j += wide) {
      product_block<R, C, Range>(a + i * lda, lda, b + j, ldb, c + i * ldc + j, ldc, len, range);
      if (lines) lines->step(R * C * len);
    }
    for (std::int64_t j = wide_cols; j < whole_cols; j += kLanes) {
      product_block<R, 1, Range>(a + i * lda, lda, b + j, ldb, c + i * ldc + j, ldc, len, range);
      if (lines) lines->step(R * len);
    }
  }
  if (left > 0) {
    const float* ai = a + whole_rows * lda;
    float* ci = c + whole_rows * ldc;
    for (std::int64_t j = 0; j < wide_cols; j += wide) {
      product_block_rows_left<R, C, Range>(left, ai, lda, b + j, ldb, ci + j, ldc, len, range);
      if (lines) lines->step(left * C * len);
    }
    for (std::int64_t j = wide_cols; j < whole_cols; j += kLanes) {
      product_block_rows_left<R, 1, Range>(left, ai, lda, b + j, ldb, ci + j, ldc, len, range);
      if (lines) lines->step(left * len);
    }
  }
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = whole_cols; j < cols; ++j) {
      float acc = 0.0f;
      for (std::int64_t t = 0; t < len; ++t) acc += a[i * lda + t] * b[t * ldb + j];
      c[i * ldc + j] = acc;
      if constexpr (Range) {
        range->lo_tail = acc < range->lo_tail ? acc : range->lo_tail;
        range->hi_tail = acc > range->hi_tail ? acc : range->hi_tail;
      }
    }
}

// Both instantiations behind one run-time choice: the range only for the context product.
template <int R, int C>
[[gnu::always_inline]] inline void product_rows_any(const float* a, std::int64_t lda,
                                                    const float* b, std::int64_t ldb, float* c,
                                                    std::int64_t ldc, std::int64_t rows,
                                                    std::int64_t cols, std::int64_t len,
                                                    RangeLanes* range, NextHeadLines* lines) {
  if (range)
    product_rows_blocked<R, C, true>(a, lda, b, ldb, c, ldc, rows, cols, len, range, lines);
  else product_rows_blocked<R, C, false>(a, lda, b, ldb, c, ldc, rows, cols, len, nullptr, lines);
}

// The instruction sets as functions of their own, so that each can be asked for by name.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QFORGE_ATTENTION_X86 1
[[gnu::target("avx512f")]] void product_rows_avx512(const float* a, std::int64_t lda,
                                                    const float* b, std::int64_t ldb, float* c,
                                                    std::int64_t ldc, std::int64_t rows,
                                                    std::int64_t cols, std::int64_t len,
                                                    RangeLanes* range, NextHeadLines* lines) {
  product_rows_any<8, 2>(a, lda, b, ldb, c, ldc, rows, cols, len, range, lines);
}
[[gnu::target("avx2")]] void product_rows_avx2(const float* a, std::int64_t lda, const float* b,
                                               std::int64_t ldb, float* c, std::int64_t ldc,
                                               std::int64_t rows, std::int64_t cols,
                                               std::int64_t len, RangeLanes* range,
                                               NextHeadLines* lines) {
  product_rows_any<4, 1>(a, lda, b, ldb, c, ldc, rows, cols, len, range, lines);
}
#endif
void product_rows_baseline(const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                           float* c, std::int64_t ldc, std::int64_t rows, std::int64_t cols,
                           std::int64_t len, RangeLanes* range, NextHeadLines* lines) {
  product_rows_any<4, 1>(a, lda, b, ldb, c, ldc, rows, cols, len, range, lines);
}

// The head's keys, [kv_len] rows of `depth` a `row` apart, into kt [depth][kv_len]: a copy, so
// any order gives the same values. Sixteen-by-sixteen tiles in registers with AVX-512 (four
// rounds of two-source shuffles, each swapping one bit of the row and column indices), the
// edges and other targets element by element.
void transpose_keys_scalar(const float* k, std::int64_t row, float* kt, std::int64_t kv_len,
                           std::int64_t depth, std::int64_t j0, std::int64_t d0) {
  for (std::int64_t j = 0; j < kv_len; ++j)
    for (std::int64_t d = j < j0 ? d0 : 0; d < depth; ++d) kt[d * kv_len + j] = k[j * row + d];
}
#ifdef QFORGE_ATTENTION_X86
// One round of the 16 x 16 tile transpose: rows r and r + W (bit W of r clear) exchange the
// lanes whose bit W differs. out[r] takes t[r + W][e - W] where bit W of e is set; out[r + W]
// t[r][e + W] where it is clear (indices from 16 name the second operand's lanes). Written as
// templates over constant row numbers so that the tile is sixteen registers: with loops over
// the rounds and rows GCC kept it in a stack array, a store and a reload per shuffle.
// vpermt2ps through its intrinsic: GCC's __builtin_shuffle has no Clang spelling with indices
// that are not constants, and the fuzz build uses Clang.
typedef int LaneIndex __attribute__((vector_size(64)));
constexpr int transpose_lane(int e, int w, bool high) {
  return high ? (e & w ? kLanes + e : e + w) : (e & w ? kLanes + e - w : e);
}
template <int W, bool High, int... E>
[[gnu::target("avx512f"), gnu::always_inline]] inline __m512i transpose_indices(
    std::integer_sequence<int, E...>) {
  return (__m512i)LaneIndex{transpose_lane(E, W, High)...};
}
template <int W, int R>
[[gnu::target("avx512f"), gnu::always_inline]] inline void transpose_pair(__m512 (&t)[kLanes],
                                                                          __m512i lo, __m512i hi) {
  if constexpr (!(R & W)) {
    const __m512 a = t[R], b = t[R + W];
    t[R] = _mm512_permutex2var_ps(a, lo, b);
    t[R + W] = _mm512_permutex2var_ps(a, hi, b);
  }
}
template <int W, int... R>
[[gnu::target("avx512f"), gnu::always_inline]] inline void transpose_round(
    __m512 (&t)[kLanes], std::integer_sequence<int, R...> rows) {
  const __m512i lo = transpose_indices<W, false>(rows), hi = transpose_indices<W, true>(rows);
  (transpose_pair<W, R>(t, lo, hi), ...);
}
// The tile at k (rows `row` apart) into kt (rows `kv_len` apart), transposed.
template <int... R>
[[gnu::target("avx512f"), gnu::always_inline]] inline void transpose_tile(
    const float* k, std::int64_t row, float* kt, std::int64_t kv_len,
    std::integer_sequence<int, R...> rows) {
  __m512 t[kLanes] = {_mm512_loadu_ps(k + R * row)...};
  transpose_round<8>(t, rows);
  transpose_round<4>(t, rows);
  transpose_round<2>(t, rows);
  transpose_round<1>(t, rows);
  (_mm512_storeu_ps(kt + R * kv_len, t[R]), ...);
}
[[gnu::target("avx512f")]] void transpose_keys_avx512(const float* k, std::int64_t row, float* kt,
                                                      std::int64_t kv_len, std::int64_t depth) {
  const std::int64_t j0 = kv_len / kLanes * kLanes, d0 = depth / kLanes * kLanes;
  for (std::int64_t j = 0; j < j0; j += kLanes)
    for (std::int64_t d = 0; d < d0; d += kLanes)
      transpose_tile(k + j * row + d, row, kt + d * kv_len + j, kv_len,
                     std::make_integer_sequence<int, kLanes>());
  // The keys past the last whole tile, and the depth past it for the tiled keys.
  transpose_keys_scalar(k, row, kt, kv_len, depth, j0, d0);
}
#endif

using ProductRows = void (*)(const float*, std::int64_t, const float*, std::int64_t, float*,
                             std::int64_t, std::int64_t, std::int64_t, std::int64_t, RangeLanes*,
                             NextHeadLines*);

ProductRows product_rows_for(AttentionProducts kind) {
#ifdef QFORGE_ATTENTION_X86
  if (kind == AttentionProducts::vector && __builtin_cpu_supports("avx512f"))
    return product_rows_avx512;
  if (kind == AttentionProducts::vector_avx2 ||
      (kind == AttentionProducts::vector && __builtin_cpu_supports("avx2")))
    return product_rows_avx2;
#endif
  return product_rows_baseline;
}

int blas_extent(std::int64_t v) {
  if (v > std::numeric_limits<int>::max())
    throw Error(ErrorCode::unsupported,
                "fused attention: an extent of " + std::to_string(v) + " exceeds BLAS's int");
  return static_cast<int>(v);
}

}  // namespace

AttentionProducts attention_products() {
  const char* env = std::getenv("QFORGE_ATTENTION_PRODUCTS");
  if (!env || std::string_view(env) == "vector") return AttentionProducts::vector;
  if (std::string_view(env) == "blas") return AttentionProducts::blas;
  if (std::string_view(env) == "vector-baseline") return AttentionProducts::vector_baseline;
  if (std::string_view(env) == "vector-avx2") {
#ifdef QFORGE_ATTENTION_X86
    if (__builtin_cpu_supports("avx2")) return AttentionProducts::vector_avx2;
#endif
    throw Error(ErrorCode::unsupported,
                "QFORGE_ATTENTION_PRODUCTS is 'vector-avx2' but this CPU (or build) has no AVX2");
  }
  throw Error(ErrorCode::invalid_argument,
              "QFORGE_ATTENTION_PRODUCTS is '" + std::string(env) +
                  "'; expected 'vector', 'vector-avx2', 'vector-baseline' or 'blas'");
}

void fused_attention(const FusedAttention& a) {
  if (a.batch == 0 || a.heads == 0 || a.q_len == 0 || a.v_depth == 0) return;
  const std::int64_t q_row = a.heads * a.depth, v_row = a.heads * a.v_depth;
  const int m = blas_extent(a.q_len), n = blas_extent(a.kv_len), k = blas_extent(a.depth),
            dv = blas_extent(a.v_depth), ldq = blas_extent(q_row), ldv = blas_extent(v_row);
  const bool blas = a.products == AttentionProducts::blas;
  const ProductRows product_rows = product_rows_for(a.products);
  // The products' vector multiply-adds (output vectors x summed length), over which the next
  // head's lines are spread.
  const std::int64_t vectors_s = a.q_len * ((a.kv_len + kLanes - 1) / kLanes);
  const std::int64_t vectors_c = a.q_len * ((a.v_depth + kLanes - 1) / kLanes);
  const std::int64_t product_work = vectors_s * a.depth + vectors_c * a.kv_len;
  auto heads = [&](std::int64_t begin, std::int64_t end) {
    thread_local std::vector<float> scratch;
    scratch.resize(
        static_cast<std::size_t>(a.q_len * a.kv_len + a.depth * a.kv_len + a.kv_len * a.v_depth));
    float* s = scratch.data();
    float* kt = s + a.q_len * a.kv_len;  // the vector kernel's transposed keys
    // The vector kernel's copy of the head's values, rows contiguous: in place they lie a whole
    // [heads * v_depth] row apart (1536 bytes for MiniLM), an address stride that maps the
    // head's 256 cache lines onto 16 of L1's 64 sets (16 lines a set, more than its ways), so
    // every block of output rows, which walks all of them, found them evicted and read them from
    // L2 again.
    float* vc = kt + a.depth * a.kv_len;
    float lo = 0.0f, hi = 0.0f;  // of the heads this task wrote (a.range)
    RangeLanes written;          // the same from the vector kernel's registers
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t b = t / a.heads, h = t % a.heads;
      const float* q = a.q + b * a.q_len * q_row + h * a.depth;
      const float* kh = a.k + b * a.kv_len * q_row + h * a.depth;
      const float* v = a.v + b * a.kv_len * v_row + h * a.v_depth;
      float* y = a.y + b * a.q_len * v_row + h * a.v_depth;
      if (a.kv_len == 0) {
        // An empty sum: the unfused MatMul writes zeros.
        for (std::int64_t i = 0; i < a.q_len; ++i) std::fill_n(y + i * v_row, a.v_depth, 0.0f);
        continue;
      }
      // The next head of this task, in the order its work reads it.
      NextHeadLines next;
      if (!blas && t + 1 < end) {
        const std::int64_t b1 = (t + 1) / a.heads, h1 = (t + 1) % a.heads;
        next.add(a.k + b1 * a.kv_len * q_row + h1 * a.depth, q_row, a.kv_len, a.depth);
        next.add(a.q + b1 * a.q_len * q_row + h1 * a.depth, q_row, a.q_len, a.depth);
        next.add(a.v + b1 * a.kv_len * v_row + h1 * a.v_depth, v_row, a.kv_len, a.v_depth);
        next.add(a.y + b1 * a.q_len * v_row + h1 * a.v_depth, v_row, a.q_len, a.v_depth);
        next.spread(product_work);
      }
      if (a.depth == 0) {
        std::fill_n(s, a.q_len * a.kv_len, 0.0f);
      } else if (blas) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, q, ldq, kh, ldq, 0.0f,
                    s, n);
      } else {
#ifdef QFORGE_ATTENTION_X86
        if (product_rows == product_rows_avx512)
          transpose_keys_avx512(kh, q_row, kt, a.kv_len, a.depth);
        else
#endif
          transpose_keys_scalar(kh, q_row, kt, a.kv_len, a.depth, 0, 0);
        product_rows(q, q_row, kt, a.kv_len, s, a.kv_len, a.q_len, a.kv_len, a.depth, nullptr,
                     &next);
      }
      const float* mask = a.mask ? a.mask + b * a.mask_strides[0] + h * a.mask_strides[1] : nullptr;
      masked_softmax_rows(s, s, a.q_len, a.kv_len, mask, a.mask_strides[2], a.mask_strides[3],
                          a.has_divisor, a.divisor);
      if (blas) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, dv, n, 1.0f, s, n, v, ldv, 0.0f,
                    y, ldv);
        if (a.range) widen_range_rows(y, a.q_len, a.v_depth, v_row, lo, hi);  // just written
      } else {
        for (std::int64_t j = 0; j < a.kv_len; ++j)
          for (std::int64_t d = 0; d < a.v_depth; ++d) vc[j * a.v_depth + d] = v[j * v_row + d];
        product_rows(s, a.kv_len, vc, a.v_depth, y, v_row, a.q_len, a.v_depth, a.kv_len,
                     a.range ? &written : nullptr, &next);
        next.rest();
      }
    }
    if (a.range) {
      written.widen(lo, hi);
      a.range->merge(lo, hi);
    }
  };
  const std::int64_t tasks = a.batch * a.heads;
  // One OpenBLAS thread per call (ops/parallel_blas.h); a few heads per task when they are tiny.
  std::optional<SingleThreadedBlas> one_blas_thread;
  if (blas) one_blas_thread.emplace();
  const std::int64_t work =
      std::max<std::int64_t>(1, a.q_len * a.kv_len * (a.depth + a.v_depth + 8));
  parallel_for(tasks, std::max<std::int64_t>(1, std::int64_t{65536} / work), heads);
}

}  // namespace qforge::model::ops
