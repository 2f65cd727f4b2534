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

template <int R>
void tile(int cols, const float* a, std::int64_t lda, const float* w, std::int64_t kc, float* y,
          std::int64_t ldy, bool accumulate, const float* bias) {
  __m256 acc[R][2];
  __m256i mlo, mhi;
  column_masks(cols, mlo, mhi);
  const bool full = cols == kWeightOnlyPanel;
  for (int r = 0; r < R; ++r) {
    if (!accumulate) {
      acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    } else if (full) {
      acc[r][0] = _mm256_loadu_ps(y + r * ldy);
      acc[r][1] = _mm256_loadu_ps(y + r * ldy + 8);
    } else {
      acc[r][0] = _mm256_maskload_ps(y + r * ldy, mlo);
      acc[r][1] = _mm256_maskload_ps(y + r * ldy + 8, mhi);
    }
  }
  for (std::int64_t k = 0; k < kc; ++k) {
    const __m256 w0 = _mm256_loadu_ps(w + 16 * k);
    const __m256 w1 = _mm256_loadu_ps(w + 16 * k + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
      acc[r][0] = _mm256_fmadd_ps(av, w0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, w1, acc[r][1]);
    }
  }
  if (bias) {
    const __m256 b0 = full ? _mm256_loadu_ps(bias) : _mm256_maskload_ps(bias, mlo);
    const __m256 b1 = full ? _mm256_loadu_ps(bias + 8) : _mm256_maskload_ps(bias + 8, mhi);
    for (int r = 0; r < R; ++r) {
      acc[r][0] = _mm256_add_ps(acc[r][0], b0);
      acc[r][1] = _mm256_add_ps(acc[r][1], b1);
    }
  }
  for (int r = 0; r < R; ++r) {
    if (full) {
      _mm256_storeu_ps(y + r * ldy, acc[r][0]);
      _mm256_storeu_ps(y + r * ldy + 8, acc[r][1]);
    } else {
      _mm256_maskstore_ps(y + r * ldy, mlo, acc[r][0]);
      _mm256_maskstore_ps(y + r * ldy + 8, mhi, acc[r][1]);
    }
  }
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
