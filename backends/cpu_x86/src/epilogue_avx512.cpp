// AVX-512 version of the fused dequantizing epilogue (compiled with the AVX-512 VNNI tier's
// flags and -ffp-contract=off, like every cpu_x86 source). On a 32x32 AMX tile with K = 1024
// the AVX2 epilogue took about a third of the tile's time; 16 lanes and mask registers for the
// last columns halve its instructions. The arithmetic is that of store_dequant_compensated_avx2
// (and of store_requant_columns_compensated_avx2 for the requantizing one).
#include <immintrin.h>

#include "gemm_epilogue.h"

namespace qforge::cpu_x86 {

void store_dequant_compensated_avx512(const TileRef& t, const Compensation& comp,
                                      const std::int32_t* za_colsum, bool zb_zero, const float* sa,
                                      const float* sb, const float* bias, float* out,
                                      std::int64_t ldo) {
  for (int r = 0; r < t.rows; ++r) {
    const __m512 a = _mm512_set1_ps(sa[r]);
    const __m512i za = _mm512_set1_epi32(comp.za[r]);
    const auto zterm_u =
        static_cast<std::uint32_t>(comp.k) * static_cast<std::uint32_t>(comp.za[r]) -
        static_cast<std::uint32_t>(comp.rowsum[r * comp.rowsum_stride]);
    const __m512i zterm = _mm512_set1_epi32(static_cast<std::int32_t>(zterm_u));
    const std::int32_t* row = t.d + r * t.ldd;
    float* dst = out + r * ldo;
    for (int c = 0; c < t.cols; c += 16) {
      // The padded tile columns exist in d, colsum, zb, sb and bias; only the output is masked.
      // (maskz_cvtepi32_ps: the unmasked form trips a GCC 12 maybe-uninitialized warning.)
      const __mmask16 m =
          t.cols - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (t.cols - c)) - 1);
      __m512i v = _mm512_loadu_si512(row + c);
      v = _mm512_sub_epi32(v, za_colsum
                                  ? _mm512_loadu_si512(za_colsum + c)
                                  : _mm512_mullo_epi32(za, _mm512_loadu_si512(comp.colsum + c)));
      if (!zb_zero)
        v = _mm512_add_epi32(v, _mm512_mullo_epi32(_mm512_loadu_si512(comp.zb + c), zterm));
      __m512 f = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, v), a),
                               _mm512_loadu_ps(sb + c));
      if (bias) f = _mm512_add_ps(f, _mm512_loadu_ps(bias + c));
      _mm512_mask_storeu_ps(dst + c, m, f);
    }
  }
}

bool store_requant_columns_compensated_avx512(const TileRef& t, const Compensation& comp,
                                              const std::int32_t* za_colsum, bool zb_zero,
                                              const std::int32_t* bias, const float* multiplier,
                                              std::int32_t zy, QuantRange range, void* out,
                                              std::int64_t ldo) {
  const __m512 lo = _mm512_set1_ps(static_cast<float>(range.qmin - zy));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(range.qmax - zy));
  const __m512i z = _mm512_set1_epi32(zy);
  auto* bytes = static_cast<std::uint8_t*>(out);
  __m512i overflow = _mm512_setzero_si512();
  for (int r = 0; r < t.rows; ++r) {
    const __m512i za = _mm512_set1_epi32(comp.za[r]);
    const auto zterm_u =
        static_cast<std::uint32_t>(comp.k) * static_cast<std::uint32_t>(comp.za[r]) -
        static_cast<std::uint32_t>(comp.rowsum[r * comp.rowsum_stride]);
    const __m512i zterm = _mm512_set1_epi32(static_cast<std::int32_t>(zterm_u));
    const std::int32_t* row = t.d + r * t.ldd;
    std::uint8_t* dst = bytes + r * ldo;
    for (int c = 0; c < t.cols; c += 16) {
      const __mmask16 m =
          t.cols - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (t.cols - c)) - 1);
      __m512i v = _mm512_loadu_si512(row + c);
      v = _mm512_sub_epi32(v, za_colsum
                                  ? _mm512_loadu_si512(za_colsum + c)
                                  : _mm512_mullo_epi32(za, _mm512_loadu_si512(comp.colsum + c)));
      if (!zb_zero)
        v = _mm512_add_epi32(v, _mm512_mullo_epi32(_mm512_loadu_si512(comp.zb + c), zterm));
      if (bias) {  // wrapping sum; a lane left int32 when both operands differ in sign from it
        const __m512i b = _mm512_loadu_si512(bias + c);
        const __m512i sum = _mm512_add_epi32(v, b);
        overflow = _mm512_or_si512(
            overflow, _mm512_and_si512(_mm512_xor_si512(v, sum), _mm512_xor_si512(b, sum)));
        v = sum;
      }
      // sat(rne(float(C) * m) + zy): clamped in float to [qmin - zy, qmax - zy] (integers, so
      // rounding stays inside), rounded to nearest even, then + zy lies in [qmin, qmax] and
      // the narrowing to bytes keeps it exactly.
      __m512 f =
          _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, v), _mm512_loadu_ps(multiplier + c));
      // (maskz forms with all lanes: the unmasked ones trip GCC 12's maybe-uninitialized.)
      f = _mm512_maskz_min_ps(0xFFFF, _mm512_maskz_max_ps(0xFFFF, f, lo), hi);
      const __m512i q = _mm512_add_epi32(
          _mm512_maskz_cvt_roundps_epi32(0xFFFF, f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
          z);
      _mm512_mask_cvtepi32_storeu_epi8(dst + c, m, q);
    }
  }
  return _mm512_test_epi32_mask(overflow, _mm512_set1_epi32(static_cast<int>(0x80000000u))) == 0;
}

}  // namespace qforge::cpu_x86
