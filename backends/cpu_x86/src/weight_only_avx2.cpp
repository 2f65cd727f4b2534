// The AVX2 + FMA parts of matmul_weight_only (weight_only.h): dequantizing a chunk of a panel
// and the 6x16 float tile.
#include <immintrin.h>

#include <algorithm>

#include "weight_only.h"

namespace qforge::cpu_x86 {
namespace {

// Lanes [0, cols) of 16 as two masks of 8.
inline void column_masks(int cols, __m256i& lo, __m256i& hi) {
  const __m256i c = _mm256_set1_epi32(cols);
  lo = _mm256_cmpgt_epi32(c, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  hi = _mm256_cmpgt_epi32(c, _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15));
}

// R rows of two accumulators as named members, one level per row. GCC keeps a local
// __m256 acc[R][2] indexed by the row loop partly in memory and stores it on every k (the
// array is not split into registers before the row loop is unrolled); members reached through
// constant recursion are.
template <int R>
struct Rows {
  __m256 c0, c1;
  Rows<R - 1> next;
};
template <>
struct Rows<0> {};

template <int R>
[[gnu::always_inline]] inline void fma_rows(Rows<R>& acc, const float* a, std::int64_t lda,
                                            __m256 w0, __m256 w1) {
  if constexpr (R > 0) {
    const __m256 av = _mm256_broadcast_ss(a);
    acc.c0 = _mm256_fmadd_ps(av, w0, acc.c0);
    acc.c1 = _mm256_fmadd_ps(av, w1, acc.c1);
    fma_rows<R - 1>(acc.next, a + lda, lda, w0, w1);
  }
}

// Row r's accumulators start from Y (accumulate), or from 0.
template <int R>
[[gnu::always_inline]] inline void load_rows(Rows<R>& acc, const float* y, std::int64_t ldy,
                                             bool accumulate, bool full, __m256i mlo, __m256i mhi) {
  if constexpr (R > 0) {
    if (!accumulate) {
      acc.c0 = acc.c1 = _mm256_setzero_ps();
    } else if (full) {
      acc.c0 = _mm256_loadu_ps(y);
      acc.c1 = _mm256_loadu_ps(y + 8);
    } else {
      acc.c0 = _mm256_maskload_ps(y, mlo);
      acc.c1 = _mm256_maskload_ps(y + 8, mhi);
    }
    load_rows<R - 1>(acc.next, y + ldy, ldy, accumulate, full, mlo, mhi);
  }
}

// Adds the bias (when not null) and stores row r.
template <int R>
[[gnu::always_inline]] inline void store_rows(Rows<R>& acc, float* y, std::int64_t ldy,
                                              const float* bias, bool full, __m256i mlo,
                                              __m256i mhi) {
  if constexpr (R > 0) {
    __m256 v0 = acc.c0, v1 = acc.c1;
    if (bias) {
      v0 = _mm256_add_ps(v0, full ? _mm256_loadu_ps(bias) : _mm256_maskload_ps(bias, mlo));
      v1 = _mm256_add_ps(v1, full ? _mm256_loadu_ps(bias + 8) : _mm256_maskload_ps(bias + 8, mhi));
    }
    if (full) {
      _mm256_storeu_ps(y, v0);
      _mm256_storeu_ps(y + 8, v1);
    } else {
      _mm256_maskstore_ps(y, mlo, v0);
      _mm256_maskstore_ps(y + 8, mhi, v1);
    }
    store_rows<R - 1>(acc.next, y + ldy, ldy, bias, full, mlo, mhi);
  }
}

template <int R>
void tile(int cols, const float* a, std::int64_t lda, const float* w, std::int64_t kc, float* y,
          std::int64_t ldy, bool accumulate, const float* bias) {
  const bool full = cols == kWeightOnlyPanel;
  __m256i mlo, mhi;
  column_masks(cols, mlo, mhi);
  Rows<R> acc;
  load_rows<R>(acc, y, ldy, accumulate, full, mlo, mhi);
  // 12 accumulators, two weight vectors and the broadcast: 15 of the 16 registers.
  for (std::int64_t k = 0; k < kc; ++k)
    fma_rows<R>(acc, a + k, lda, _mm256_loadu_ps(w + 16 * k), _mm256_loadu_ps(w + 16 * k + 8));
  column_masks(cols, mlo, mhi);  // made again rather than kept live through the loop
  store_rows<R>(acc, y, ldy, bias, full, mlo, mhi);
}

}  // namespace

void weight_only_decode_avx2(const WeightOnlyWeights& w, std::int64_t p, std::int64_t k0,
                             std::int64_t k1, float* dst) {
  const std::size_t per_k = w.four_bit ? 8 : 16;
  const std::uint8_t* codes = w.codes.data() + static_cast<std::size_t>(p * w.k) * per_k;
  const __m128i nibble = _mm_set1_epi8(0x0F);
  std::int64_t k = k0;
  while (k < k1) {
    // One (scale, zero point) group at a time: its vectors stay in registers.
    const std::int64_t j = k / w.group;
    const std::int64_t end = std::min(k1, (j + 1) * w.group);
    const float* s = w.scales.data() + (p * w.groups + j) * kWeightOnlyPanel;
    const float* z = w.zeros.data() + (p * w.groups + j) * kWeightOnlyPanel;
    const __m256 s0 = _mm256_loadu_ps(s), s1 = _mm256_loadu_ps(s + 8);
    const __m256 z0 = _mm256_loadu_ps(z), z1 = _mm256_loadu_ps(z + 8);
    for (; k < end; ++k) {
      __m256i i0, i1;
      if (w.four_bit) {
        const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + k * 8));
        i0 = _mm256_cvtepu8_epi32(_mm_and_si128(v, nibble));
        i1 = _mm256_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(v, 4), nibble));
      } else {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + k * 16));
        i0 = _mm256_cvtepu8_epi32(v);
        i1 = _mm256_cvtepu8_epi32(_mm_srli_si128(v, 8));
      }
      // (u - z') is the exact integer q - z; one rounding in the product, as the reference.
      float* out = dst + (k - k0) * kWeightOnlyPanel;
      _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(i0), z0), s0));
      _mm256_storeu_ps(out + 8, _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(i1), z1), s1));
    }
  }
}

void weight_only_tile_avx2(int rows, int cols, const float* a, std::int64_t lda, const float* w,
                           std::int64_t kc, float* y, std::int64_t ldy, bool accumulate,
                           const float* bias) {
  switch (rows) {
    case 1: return tile<1>(cols, a, lda, w, kc, y, ldy, accumulate, bias);
    case 2: return tile<2>(cols, a, lda, w, kc, y, ldy, accumulate, bias);
    case 3: return tile<3>(cols, a, lda, w, kc, y, ldy, accumulate, bias);
    case 4: return tile<4>(cols, a, lda, w, kc, y, ldy, accumulate, bias);
    case 5: return tile<5>(cols, a, lda, w, kc, y, ldy, accumulate, bias);
    default: return tile<6>(cols, a, lda, w, kc, y, ldy, accumulate, bias);
  }
}

}  // namespace qforge::cpu_x86
