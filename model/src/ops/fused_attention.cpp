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

#include "ops/fused.h"
#include "ops/parallel.h"
#include "ops/parallel_blas.h"
#include "ops/value_range.h"
#include "qforge/error.h"

namespace qforge::model::ops {
namespace {

// The products without BLAS: blocks of 4 output rows x 16 columns whose accumulators are
// vector values (registers: one zmm each with AVX-512, two ymm with AVX2) over the whole sum,
// each loaded operand used by the 4 rows; a head's keys are transposed once into the scratch
// so the scores read them as rows. Every output is summed in index order, multiply then add
// (no FMA contraction in ISO C++ builds), so every clone and every blocking gives the same bits.
typedef float Lanes __attribute__((vector_size(64)));
// The same lanes at any float's address (unaligned loads and stores).
typedef float UnalignedLanes __attribute__((vector_size(64), aligned(4), may_alias));
constexpr std::int64_t kLanes = 16;
constexpr std::int64_t kRows = 4;
#define QFORGE_LANES_AT(p) (*reinterpret_cast<const UnalignedLanes*>(p))
#define QFORGE_LANES_TO(p) (*reinterpret_cast<UnalignedLanes*>(p))

// AVX-512 too: the Xeons this runs on have it.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QFORGE_ATTENTION_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define QFORGE_ATTENTION_CLONES
#endif

// c[i, j] = sum_t a[i * lda + t * a_step] * b[t * ldb + j] for i < rows, j < cols, t < len:
// both products (scores: a = q's rows, b = the transposed keys; context: a = the
// probabilities, b = v's rows).
QFORGE_ATTENTION_CLONES void product_rows(const float* a, std::int64_t lda, const float* b,
                                          std::int64_t ldb, float* c, std::int64_t ldc,
                                          std::int64_t rows, std::int64_t cols, std::int64_t len) {
  const std::int64_t whole_cols = cols / kLanes * kLanes, whole_rows = rows / kRows * kRows;
  for (std::int64_t i = 0; i < whole_rows; i += kRows) {
    const float* a0 = a + i * lda;
    const float* a1 = a0 + lda;
    const float* a2 = a1 + lda;
    const float* a3 = a2 + lda;
    for (std::int64_t j = 0; j < whole_cols; j += kLanes) {
      Lanes c0 = {}, c1 = {}, c2 = {}, c3 = {};
      for (std::int64_t t = 0; t < len; ++t) {
        const Lanes bt = QFORGE_LANES_AT(b + t * ldb + j);
        c0 += a0[t] * bt;
        c1 += a1[t] * bt;
        c2 += a2[t] * bt;
        c3 += a3[t] * bt;
      }
      QFORGE_LANES_TO(c + i * ldc + j) = c0;
      QFORGE_LANES_TO(c + (i + 1) * ldc + j) = c1;
      QFORGE_LANES_TO(c + (i + 2) * ldc + j) = c2;
      QFORGE_LANES_TO(c + (i + 3) * ldc + j) = c3;
    }
  }
  for (std::int64_t i = whole_rows; i < rows; ++i)
    for (std::int64_t j = 0; j < whole_cols; j += kLanes) {
      Lanes acc = {};
      for (std::int64_t t = 0; t < len; ++t)
        acc += a[i * lda + t] * QFORGE_LANES_AT(b + t * ldb + j);
      QFORGE_LANES_TO(c + i * ldc + j) = acc;
    }
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = whole_cols; j < cols; ++j) {
      float acc = 0.0f;
      for (std::int64_t t = 0; t < len; ++t) acc += a[i * lda + t] * b[t * ldb + j];
      c[i * ldc + j] = acc;
    }
}

int blas_extent(std::int64_t v) {
  if (v > std::numeric_limits<int>::max())
    throw Error(ErrorCode::unsupported,
                "fused attention: an extent of " + std::to_string(v) + " exceeds BLAS's int");
  return static_cast<int>(v);
}

}  // namespace

bool attention_products_blas() {
  const char* env = std::getenv("QFORGE_ATTENTION_PRODUCTS");
  if (!env || std::string_view(env) == "vector") return false;
  if (std::string_view(env) == "blas") return true;
  throw Error(ErrorCode::invalid_argument, "QFORGE_ATTENTION_PRODUCTS is '" + std::string(env) +
                                               "'; expected 'blas' or 'vector'");
}

void fused_attention(const FusedAttention& a) {
  if (a.batch == 0 || a.heads == 0 || a.q_len == 0 || a.v_depth == 0) return;
  const std::int64_t q_row = a.heads * a.depth, v_row = a.heads * a.v_depth;
  const int m = blas_extent(a.q_len), n = blas_extent(a.kv_len), k = blas_extent(a.depth),
            dv = blas_extent(a.v_depth), ldq = blas_extent(q_row), ldv = blas_extent(v_row);
  auto heads = [&](std::int64_t begin, std::int64_t end) {
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<std::size_t>(a.q_len * a.kv_len + a.depth * a.kv_len));
    float* s = scratch.data();
    float* kt = s + a.q_len * a.kv_len;  // the vector kernel's transposed keys
    float lo = 0.0f, hi = 0.0f;          // of the heads this task wrote (a.range)
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
      } else if (a.blas) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, q, ldq, kh, ldq, 0.0f,
                    s, n);
      } else {
        for (std::int64_t j = 0; j < a.kv_len; ++j)
          for (std::int64_t d = 0; d < a.depth; ++d) kt[d * a.kv_len + j] = kh[j * q_row + d];
        product_rows(q, q_row, kt, a.kv_len, s, a.kv_len, a.q_len, a.kv_len, a.depth);
      }
      const float* mask = a.mask ? a.mask + b * a.mask_strides[0] + h * a.mask_strides[1] : nullptr;
      for (std::int64_t i = 0; i < a.q_len; ++i)
        masked_softmax_row(s + i * a.kv_len, s + i * a.kv_len,
                           mask ? mask + i * a.mask_strides[2] : nullptr, a.mask_strides[3],
                           a.kv_len, a.has_divisor, a.divisor);
      if (a.blas)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, dv, n, 1.0f, s, n, v, ldv, 0.0f,
                    y, ldv);
      else product_rows(s, a.kv_len, v, v_row, y, v_row, a.q_len, a.v_depth, a.kv_len);
      if (a.range) widen_range_rows(y, a.q_len, a.v_depth, v_row, lo, hi);  // just written
    }
    if (a.range) a.range->merge(lo, hi);
  };
  const std::int64_t tasks = a.batch * a.heads;
  // One OpenBLAS thread per call (ops/parallel_blas.h); a few heads per task when they are tiny.
  std::optional<SingleThreadedBlas> one_blas_thread;
  if (a.blas) one_blas_thread.emplace();
  const std::int64_t work =
      std::max<std::int64_t>(1, a.q_len * a.kv_len * (a.depth + a.v_depth + 8));
  parallel_for(tasks, std::max<std::int64_t>(1, std::int64_t{65536} / work), heads);
}

}  // namespace qforge::model::ops
