// AVX2 epilogue kernels (compiled with -mavx2 -mfma -ffp-contract=off: the float expressions
// must round exactly as reference.h writes them, so no multiply-add may be fused).
#include <immintrin.h>

#include <cstring>

#include "gemm_epilogue.h"

namespace qforge::cpu_x86 {
namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

inline __m256i lane_mask(int valid) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline void store8_f32(float* p, __m256 v, int valid) {
  if (valid >= 8) _mm256_storeu_ps(p, v);
  else _mm256_maskstore_ps(p, lane_mask(valid), v);
}

inline void store8_i32(std::int32_t* p, __m256i v, int valid) {
  if (valid >= 8) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  else _mm256_maskstore_epi32(reinterpret_cast<int*>(p), lane_mask(valid), v);
}

inline __m256i load8(const std::int32_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

}  // namespace

void compensate_avx2(const TileRef& t, const Compensation& comp) {
  for (int r = 0; r < t.rows; ++r) {
    const __m256i rs = _mm256_set1_epi32(comp.rowsum[r * comp.rowsum_stride]);
    const __m256i za = _mm256_set1_epi32(comp.za[r]);
    const __m256i kza = _mm256_mullo_epi32(_mm256_set1_epi32(comp.k), za);
    std::int32_t* row = t.d + r * t.ldd;
    for (int c = 0; c < t.padded_cols; c += 8) {
      const __m256i zb = load8(comp.zb + c);
      const __m256i cs = load8(comp.colsum + c);
      __m256i v = load8(row + c);
      // D - zb*rowsum - za*colsum + k*za*zb  =  D - za*colsum + zb*(k*za - rowsum)
      v = _mm256_sub_epi32(v, _mm256_mullo_epi32(za, cs));
      v = _mm256_add_epi32(v, _mm256_mullo_epi32(zb, _mm256_sub_epi32(kza, rs)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + c), v);
    }
  }
}

void store_int32_avx2(const TileRef& t, std::int32_t* out, std::int64_t ldo) {
  for (int r = 0; r < t.rows; ++r)
    for (int c = 0; c < t.cols; c += 8)
      store8_i32(out + r * ldo + c, load8(t.d + r * t.ldd + c), t.cols - c);
}

void store_dequant_compensated_avx2(const TileRef& t, const Compensation& comp,
                                    const std::int32_t* za_colsum, bool zb_zero, const float* sa,
                                    const float* sb, const float* bias, float* out,
                                    std::int64_t ldo) {
  for (int r = 0; r < t.rows; ++r) {
    const __m256 a = _mm256_set1_ps(sa[r]);
    const __m256i za = _mm256_set1_epi32(comp.za[r]);
    // zb * (k*za - rowsum), the row's factor of the B zero-point term
    const auto zterm_u =
        static_cast<std::uint32_t>(comp.k) * static_cast<std::uint32_t>(comp.za[r]) -
        static_cast<std::uint32_t>(comp.rowsum[r * comp.rowsum_stride]);
    const __m256i zterm = _mm256_set1_epi32(static_cast<std::int32_t>(zterm_u));
    const std::int32_t* row = t.d + r * t.ldd;
    for (int c = 0; c < t.cols; c += 8) {
      __m256i v = load8(row + c);
      v = _mm256_sub_epi32(
          v, za_colsum ? load8(za_colsum + c) : _mm256_mullo_epi32(za, load8(comp.colsum + c)));
      if (!zb_zero) v = _mm256_add_epi32(v, _mm256_mullo_epi32(load8(comp.zb + c), zterm));
      __m256 f = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), a), _mm256_loadu_ps(sb + c));
      if (bias) f = _mm256_add_ps(f, _mm256_loadu_ps(bias + c));
      store8_f32(out + r * ldo + c, f, t.cols - c);
    }
  }
}

void accumulate_dequant_avx2(const TileRef& t, const float* sa, const float* sb, float* acc,
                             std::int64_t ldacc) {
  for (int r = 0; r < t.rows; ++r) {
    const __m256 a = _mm256_set1_ps(sa[r]);
    float* row = acc + r * ldacc;
    for (int c = 0; c < t.padded_cols; c += 8) {
      const __m256 v =
          _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(load8(t.d + r * t.ldd + c)), a),
                        _mm256_loadu_ps(sb + c));
      _mm256_storeu_ps(row + c, _mm256_add_ps(_mm256_loadu_ps(row + c), v));
    }
  }
}

void accumulate_int32_avx2(const TileRef& t, std::int32_t* acc, std::int64_t ldacc) {
  for (int r = 0; r < t.rows; ++r) {
    std::int32_t* row = acc + r * ldacc;
    for (int c = 0; c < t.padded_cols; c += 8)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + c),
                          _mm256_add_epi32(load8(row + c), load8(t.d + r * t.ldd + c)));
  }
}

void store_f32_avx2(const float* acc, std::int64_t ldacc, int rows, int cols, const float* bias,
                    float* out, std::int64_t ldo) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; c += 8) {
      __m256 v = _mm256_loadu_ps(acc + r * ldacc + c);
      if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + c));
      store8_f32(out + r * ldo + c, v, cols - c);
    }
}

void store_i32_avx2(const std::int32_t* acc, std::int64_t ldacc, int rows, int cols,
                    std::int32_t* out, std::int64_t ldo) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; c += 8)
      store8_i32(out + r * ldo + c, load8(acc + r * ldacc + c), cols - c);
}

namespace {

// Float-multiplier requantization of 8 int32 lanes with their multipliers m, stored as 8 codes
// (cols - c of them at the row's end): sat(rne(float(c) * m) + zy).
inline void requant8_store(__m256i c8, __m256 m, __m256 lo, __m256 hi, __m256i z, bool is_signed,
                           std::uint8_t* dst, int valid) {
  __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(c8), m);
  // rne, saturate, NaN-free here (finite multipliers are checked by the driver).
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  const __m256i q = _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_round_ps(v, kRound)), z);
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  const __m128i b = is_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
  if (valid >= 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), b);
  } else {
    alignas(16) std::uint8_t tmp[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
    std::memcpy(dst, tmp, static_cast<std::size_t>(valid));
  }
}

}  // namespace

void store_requant_float_avx2(const TileRef& t, const float* sa, const float* sb, float sy,
                              std::int32_t zy, QuantRange range, void* out, std::int64_t ldo) {
  const __m256 lo = _mm256_set1_ps(static_cast<float>(range.qmin - zy));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(range.qmax - zy));
  const __m256i z = _mm256_set1_epi32(zy);
  const __m256 y = _mm256_set1_ps(sy);
  auto* bytes = static_cast<std::uint8_t*>(out);
  for (int r = 0; r < t.rows; ++r) {
    const __m256 a = _mm256_set1_ps(sa[r]);
    for (int c = 0; c < t.cols; c += 8) {
      const __m256 m = _mm256_div_ps(_mm256_mul_ps(a, _mm256_loadu_ps(sb + c)), y);
      requant8_store(load8(t.d + r * t.ldd + c), m, lo, hi, z, range.is_signed, bytes + r * ldo + c,
                     t.cols - c);
    }
  }
}

void store_requant_columns_avx2(const TileRef& t, const float* multiplier, std::int32_t zy,
                                QuantRange range, void* out, std::int64_t ldo) {
  const __m256 lo = _mm256_set1_ps(static_cast<float>(range.qmin - zy));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(range.qmax - zy));
  const __m256i z = _mm256_set1_epi32(zy);
  auto* bytes = static_cast<std::uint8_t*>(out);
  for (int r = 0; r < t.rows; ++r)
    for (int c = 0; c < t.cols; c += 8)
      requant8_store(load8(t.d + r * t.ldd + c), _mm256_loadu_ps(multiplier + c), lo, hi, z,
                     range.is_signed, bytes + r * ldo + c, t.cols - c);
}

namespace {

// C + bias in wrapping int32, and the lanes whose true sum left int32 (both operands then
// differ in sign from the wrapped sum) in the sign bits of `overflow`.
inline __m256i add_bias8(__m256i c, __m256i bias, __m256i& overflow) {
  const __m256i sum = _mm256_add_epi32(c, bias);
  overflow = _mm256_or_si256(
      overflow, _mm256_and_si256(_mm256_xor_si256(c, sum), _mm256_xor_si256(bias, sum)));
  return sum;
}

inline bool no_overflow(__m256i overflow) {
  return _mm256_movemask_ps(_mm256_castsi256_ps(overflow)) == 0;
}

}  // namespace

bool add_bias_i32_avx2(const TileRef& t, const std::int32_t* bias) {
  __m256i overflow = _mm256_setzero_si256();
  for (int r = 0; r < t.rows; ++r) {
    std::int32_t* row = t.d + r * t.ldd;
    for (int c = 0; c < t.padded_cols; c += 8)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + c),
                          add_bias8(load8(row + c), load8(bias + c), overflow));
  }
  return no_overflow(overflow);
}

bool store_requant_columns_compensated_avx2(const TileRef& t, const Compensation& comp,
                                            const std::int32_t* za_colsum, bool zb_zero,
                                            const std::int32_t* bias, const float* multiplier,
                                            std::int32_t zy, QuantRange range, void* out,
                                            std::int64_t ldo) {
  const __m256 lo = _mm256_set1_ps(static_cast<float>(range.qmin - zy));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(range.qmax - zy));
  const __m256i z = _mm256_set1_epi32(zy);
  auto* bytes = static_cast<std::uint8_t*>(out);
  __m256i overflow = _mm256_setzero_si256();
  for (int r = 0; r < t.rows; ++r) {
    const __m256i za = _mm256_set1_epi32(comp.za[r]);
    // zb * (k*za - rowsum), the row's factor of the B zero-point term
    const auto zterm_u =
        static_cast<std::uint32_t>(comp.k) * static_cast<std::uint32_t>(comp.za[r]) -
        static_cast<std::uint32_t>(comp.rowsum[r * comp.rowsum_stride]);
    const __m256i zterm = _mm256_set1_epi32(static_cast<std::int32_t>(zterm_u));
    const std::int32_t* row = t.d + r * t.ldd;
    for (int c = 0; c < t.cols; c += 8) {
      __m256i v = load8(row + c);
      v = _mm256_sub_epi32(
          v, za_colsum ? load8(za_colsum + c) : _mm256_mullo_epi32(za, load8(comp.colsum + c)));
      if (!zb_zero) v = _mm256_add_epi32(v, _mm256_mullo_epi32(load8(comp.zb + c), zterm));
      if (bias) v = add_bias8(v, load8(bias + c), overflow);
      requant8_store(v, _mm256_loadu_ps(multiplier + c), lo, hi, z, range.is_signed,
                     bytes + r * ldo + c, t.cols - c);
    }
  }
  return no_overflow(overflow);
}

namespace {

// reference::multiply_by_quantized_multiplier for 8 lanes, each with its own multiplier (in
// [0, 2^31), as quantize_multiplier makes them), left shift (0..32) and right shift (0..31):
//   a = saturate_int32(x * 2^left)
//   h = (a * m + 2^30) >> 31           SaturatingRoundingDoublingHighMul: for a * m >= 0 the
//                                      nudge is 2^30 and the division truncates; for a * m < 0
//                                      truncating (a * m + 1 - 2^30) / 2^31 is the same floor.
//                                      (a = m = INT32_MIN, its one saturating case, needs m < 0.)
//   y = (h >> right) + (h & mask > (mask >> 1) + (h < 0))    RoundingDivideByPOT
inline __m256i fixed_point8(__m256i x, __m256i m, __m256i left, __m256i right) {
  const __m256i shifted = _mm256_sllv_epi32(x, left);
  const __m256i exact = _mm256_cmpeq_epi32(_mm256_srav_epi32(shifted, left), x);
  const __m256i sat = _mm256_blendv_epi8(_mm256_set1_epi32(0x7fffffff),
                                         _mm256_set1_epi32(static_cast<int>(0x80000000u)),
                                         _mm256_srai_epi32(x, 31));
  const __m256i a = _mm256_blendv_epi8(sat, shifted, exact);
  const __m256i nudge = _mm256_set1_epi64x(std::int64_t{1} << 30);
  const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(a, m), nudge), 31);
  const __m256i odd = _mm256_srli_epi64(
      _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(m, 32)), nudge),
      31);
  const __m256i h = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one);
  const __m256i remainder = _mm256_and_si256(h, mask);
  const __m256i threshold =
      _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_cmpgt_epi32(_mm256_setzero_si256(), h));
  return _mm256_sub_epi32(_mm256_srav_epi32(h, right), _mm256_cmpgt_epi32(remainder, threshold));
}

}  // namespace

void store_requant_fixed_avx2(const TileRef& t, const std::int32_t* multiplier,
                              const std::int32_t* left, const std::int32_t* right, std::int32_t zy,
                              QuantRange range, void* out, std::int64_t ldo) {
  // clamp(h + zy, qmin, qmax) as clamp(h, qmin - zy, qmax - zy) + zy: h + zy may leave int32.
  const __m256i z = _mm256_set1_epi32(zy);
  const __m256i lo = _mm256_set1_epi32(range.qmin - zy), hi = _mm256_set1_epi32(range.qmax - zy);
  auto* bytes = static_cast<std::uint8_t*>(out);
  for (int c = 0; c < t.cols; c += 8) {
    const __m256i m = load8(multiplier + c), l = load8(left + c), r = load8(right + c);
    for (int row = 0; row < t.rows; ++row) {
      __m256i q = fixed_point8(load8(t.d + row * t.ldd + c), m, l, r);
      q = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(q, lo), hi), z);
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      const __m128i b = range.is_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
      std::uint8_t* dst = bytes + row * ldo + c;
      if (t.cols - c >= 8) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), b);
      } else {
        alignas(16) std::uint8_t tmp[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tmp), b);
        std::memcpy(dst, tmp, static_cast<std::size_t>(t.cols - c));
      }
    }
  }
}

}  // namespace qforge::cpu_x86
