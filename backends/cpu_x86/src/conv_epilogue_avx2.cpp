// conv_dequant's epilogue (AVX2 translation unit): eight output channels of a pixel per
// instruction, in the reference's order of float operations (the backend compiles with
// -ffp-contract=off, so the multiplies and the add stay separate roundings).
#include <immintrin.h>

#include "conv_kernels.h"

namespace qforge::cpu_x86 {

void store_conv_dequant_avx2(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                             std::int64_t cols, float sx, const float* sw, const float* bias,
                             float lo, float hi, float* out, std::int64_t ldo) {
  const __m256 vsx = _mm256_set1_ps(sx), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (std::int64_t c = 0; c < cols; c += 8) {
    const __m256i mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<std::int32_t>(cols - c)), lane);
    const __m256 w = _mm256_maskload_ps(sw + c, mask);
    const __m256 b = bias ? _mm256_maskload_ps(bias + c, mask) : _mm256_setzero_ps();
    for (std::int64_t r = 0; r < rows; ++r) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * ld + c));
      __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(a), vsx), w);
      if (bias) v = _mm256_add_ps(v, b);
      // v < lo ? lo : v > hi ? hi : v (MINPS / MAXPS return their second operand on ties and
      // NaN, as the comparisons do)
      v = _mm256_max_ps(vlo, _mm256_min_ps(vhi, v));
      // A full store where 8 columns are valid (a masked store is microcoded on some cores).
      if (cols - c >= 8) {
        _mm256_storeu_ps(out + r * ldo + c, v);
      } else {
        alignas(32) float tail[8];
        _mm256_store_ps(tail, v);
        for (std::int64_t i = 0; i < cols - c; ++i) out[r * ldo + c + i] = tail[i];
      }
    }
  }
}

}  // namespace qforge::cpu_x86
