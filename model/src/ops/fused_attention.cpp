// Scaled dot-product attention per (batch, head) (ops/fused.h): the unfused graph writes the
// head-split copies of Q, K and V, the [batch, heads, q_len, kv_len] scores three times (MatMul,
// Div and mask Add, Softmax) and the merge copy of the context; here each head's scores
// (q_len x kv_len floats, 64 KiB for 128 tokens) stay in a per-thread buffer in cache between
// the two products, and Q, K, V and the output are touched once each.
#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
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

// c[i, j] = sum_t a[i * lda + t] * b[t * ldb + j] for i < rows, j < cols, t < len: both
// products (scores: a = q's rows, b = the transposed keys; context: a = the probabilities,
// b = v's rows). Blocks of R x C vectors, then of R x 1 vector for the columns left, then single
// rows, then single columns. With Range, what it writes widens *range.
template <int R, int C, bool Range>
[[gnu::always_inline]] inline void product_rows_blocked(const float* a, std::int64_t lda,
                                                        const float* b, std::int64_t ldb, float* c,
                                                        std::int64_t ldc, std::int64_t rows,
                                                        std::int64_t cols, std::int64_t len,
                                                        RangeLanes* range) {
  constexpr std::int64_t wide = C * kLanes;
  const std::int64_t wide_cols = cols / wide * wide, whole_cols = cols / kLanes * kLanes;
  const std::int64_t whole_rows = rows / R * R;
  for (std::int64_t i = 0; i < whole_rows; i += R) {
    for (std::int64_t j = 0; j < wide_cols; j += wide)
      product_block<R, C, Range>(a + i * lda, lda, b + j, ldb, c + i * ldc + j, ldc, len, range);
    for (std::int64_t j = wide_cols; j < whole_cols; j += kLanes)
      product_block<R, 1, Range>(a + i * lda, lda, b + j, ldb, c + i * ldc + j, ldc, len, range);
  }
  for (std::int64_t i = whole_rows; i < rows; ++i)
    for (std::int64_t j = 0; j < whole_cols; j += kLanes)
      product_block<1, 1, Range>(a + i * lda, lda, b + j, ldb, c + i * ldc + j, ldc, len, range);
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
                                                    RangeLanes* range) {
  if (range) product_rows_blocked<R, C, true>(a, lda, b, ldb, c, ldc, rows, cols, len, range);
  else product_rows_blocked<R, C, false>(a, lda, b, ldb, c, ldc, rows, cols, len, nullptr);
}

// The instruction sets as functions of their own, so that each can be asked for by name.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QFORGE_ATTENTION_X86 1
[[gnu::target("avx512f")]] void product_rows_avx512(const float* a, std::int64_t lda,
                                                    const float* b, std::int64_t ldb, float* c,
                                                    std::int64_t ldc, std::int64_t rows,
                                                    std::int64_t cols, std::int64_t len,
                                                    RangeLanes* range) {
  product_rows_any<8, 2>(a, lda, b, ldb, c, ldc, rows, cols, len, range);
}
[[gnu::target("avx2")]] void product_rows_avx2(const float* a, std::int64_t lda, const float* b,
                                               std::int64_t ldb, float* c, std::int64_t ldc,
                                               std::int64_t rows, std::int64_t cols,
                                               std::int64_t len, RangeLanes* range) {
  product_rows_any<4, 1>(a, lda, b, ldb, c, ldc, rows, cols, len, range);
}
#endif
void product_rows_baseline(const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                           float* c, std::int64_t ldc, std::int64_t rows, std::int64_t cols,
                           std::int64_t len, RangeLanes* range) {
  product_rows_any<4, 1>(a, lda, b, ldb, c, ldc, rows, cols, len, range);
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
typedef int LaneIndex __attribute__((vector_size(64)));
[[gnu::target("avx512f")]] void transpose_keys_avx512(const float* k, std::int64_t row, float* kt,
                                                      std::int64_t kv_len, std::int64_t depth) {
  const std::int64_t j0 = kv_len / kLanes * kLanes, d0 = depth / kLanes * kLanes;
  for (std::int64_t j = 0; j < j0; j += kLanes)
    for (std::int64_t d = 0; d < d0; d += kLanes) {
      Lanes t[kLanes];
      for (int r = 0; r < kLanes; ++r) t[r] = QFORGE_LANES_AT(k + (j + r) * row + d);
      for (int w = 8; w > 0; w /= 2) {
        // out[r] takes t[r + w][e - w] where bit w of e is set; out[r + w] t[r][e + w] where it
        // is clear (indices from 16 name the second operand's lanes).
        // vpermt2ps through its intrinsic: GCC's __builtin_shuffle has no Clang spelling with
        // indices that are not constants, and the fuzz build uses Clang.
        LaneIndex lo, hi;
        for (int e = 0; e < kLanes; ++e) {
          lo[e] = e & w ? kLanes + e - w : e;
          hi[e] = e & w ? kLanes + e : e + w;
        }
        const __m512i lo_index = (__m512i)lo, hi_index = (__m512i)hi;
        for (int r = 0; r < kLanes; ++r)
          if (!(r & w)) {
            const __m512 a = (__m512)t[r], b = (__m512)t[r + w];
            t[r] = (Lanes)_mm512_permutex2var_ps(a, lo_index, b);
            t[r + w] = (Lanes)_mm512_permutex2var_ps(a, hi_index, b);
          }
      }
      for (int r = 0; r < kLanes; ++r) QFORGE_LANES_TO(kt + (d + r) * kv_len + j) = t[r];
    }
  // The keys past the last whole tile, and the depth past it for the tiled keys.
  transpose_keys_scalar(k, row, kt, kv_len, depth, j0, d0);
}
#endif

using ProductRows = void (*)(const float*, std::int64_t, const float*, std::int64_t, float*,
                             std::int64_t, std::int64_t, std::int64_t, std::int64_t, RangeLanes*);

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
        product_rows(q, q_row, kt, a.kv_len, s, a.kv_len, a.q_len, a.kv_len, a.depth, nullptr);
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
                     a.range ? &written : nullptr);
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
