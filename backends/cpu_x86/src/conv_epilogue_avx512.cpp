// The convolution epilogue in AVX-512 (compiled with the AVX-512 VNNI tier's flags and
// -ffp-contract=off): the int32 bias with its overflow check in the same pass as
// conv_integer's store, qlinear_conv's float-multiplier and fixed-point requantization and
// conv_dequant, 16 output channels per instruction with mask registers for the last ones. Each is
// the AVX2 version's arithmetic (conv_epilogue_avx2.cpp, epilogue_avx2.cpp) lane for lane, operands
// of min/max in the same order. Behind the AMX implicit GEMM the AVX2 stores were most of a block's
// time on one thread.
#include <immintrin.h>

#include <type_traits>

#include "conv_kernels.h"
#include "conv_requant_avx512.h"

// GCC 12 reports the unmasked AVX-512 intrinsics' internal _mm512_undefined_* operands as "may be
// used uninitialized" once inlined (a false positive: those operands are fully overwritten).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace qforge::cpu_x86 {
namespace {

inline __mmask16 tail_mask(std::int64_t valid) {
  return valid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1);
}

// acc + bias in wrapping int32, or acc without a bias; overflow collects the sign bit of every
// sum that left int32 (both operands differ in sign from it).
template <bool kBias>
inline __m512i with_bias(__m512i a, __m512i b, __m512i& overflow) {
  if constexpr (!kBias) return a;
  const __m512i sum = _mm512_add_epi32(a, b);
  overflow = _mm512_or_si512(overflow,
                             _mm512_and_si512(_mm512_xor_si512(a, sum), _mm512_xor_si512(b, sum)));
  return sum;
}

// Calls body(c, k, bias) for each 16-channel step c (mask k of the valid channels, the bias
// vector or 0) with kBias fixed by whether bias is null; returns false when a sum overflowed.
template <class Body>
bool by_channel_blocks(std::int64_t cols, const std::int32_t* bias, const Body& body) {
  __m512i overflow = _mm512_setzero_si512();
  for (std::int64_t c = 0; c < cols; c += 16) {
    const __mmask16 k = tail_mask(cols - c);
    if (bias) body(std::true_type{}, c, k, _mm512_maskz_loadu_epi32(k, bias + c), overflow);
    else body(std::false_type{}, c, k, _mm512_setzero_si512(), overflow);
  }
  return negative_lanes(overflow) == 0;
}

}  // namespace

bool store_conv_int32_avx512(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                             std::int64_t cols, const std::int32_t* bias, std::int32_t* out,
                             std::int64_t ldo) {
  return by_channel_blocks(
      cols, bias, [&](auto has_bias, std::int64_t c, __mmask16 k, __m512i b, __m512i& overflow) {
        for (std::int64_t r = 0; r < rows; ++r) {
          const __m512i a = _mm512_maskz_loadu_epi32(k, acc + r * ld + c);
          _mm512_mask_storeu_epi32(out + r * ldo + c, k,
                                   with_bias<decltype(has_bias)::value>(a, b, overflow));
        }
      });
}

bool store_requant_columns_avx512(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                                  std::int64_t cols, const std::int32_t* bias,
                                  const float* multiplier, std::int32_t zy, std::int32_t qmin,
                                  std::int32_t qmax, std::uint8_t* out, std::int64_t ldo) {
  const __m512 lo = _mm512_set1_ps(static_cast<float>(qmin - zy));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(qmax - zy));
  const __m512i z = _mm512_set1_epi32(zy);
  return by_channel_blocks(
      cols, bias, [&](auto has_bias, std::int64_t c, __mmask16 k, __m512i b, __m512i& overflow) {
        const __m512 m = _mm512_maskz_loadu_ps(k, multiplier + c);
        for (std::int64_t r = 0; r < rows; ++r) {
          const __m512i a = with_bias<decltype(has_bias)::value>(
              _mm512_maskz_loadu_epi32(k, acc + r * ld + c), b, overflow);
          __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), m);
          v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
          // Rounding to nearest even in the conversion itself (embedded rounding, whatever
          // MXCSR holds): the value roundscale then truncation give, in one instruction.
          const __m512i q = _mm512_add_epi32(
              _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
          // q is inside [qmin, qmax] already: the byte is its low 8 bits.
          _mm512_mask_cvtepi32_storeu_epi8(out + r * ldo + c, k, q);
        }
      });
}

bool store_requant_fixed_avx512(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                                std::int64_t cols, const std::int32_t* bias,
                                const std::int32_t* multiplier, const std::int32_t* left,
                                const std::int32_t* right, bool any_left, std::int32_t zy,
                                std::int32_t qmin, std::int32_t qmax, std::uint8_t* out,
                                std::int64_t ldo) {
  // clamp(h + zy, qmin, qmax) as clamp(h, qmin - zy, qmax - zy) + zy: h + zy may leave int32.
  const __m512i z = _mm512_set1_epi32(zy);
  const __m512i lo = _mm512_set1_epi32(qmin - zy), hi = _mm512_set1_epi32(qmax - zy);
  return by_channel_blocks(
      cols, bias, [&](auto has_bias, std::int64_t c, __mmask16 k, __m512i b, __m512i& overflow) {
        const FixedChannels f(_mm512_maskz_loadu_epi32(k, multiplier + c),
                              _mm512_maskz_loadu_epi32(k, right + c));
        const __m512i l = _mm512_maskz_loadu_epi32(k, left + c);
        auto rows_with = [&](auto shifts) {
          for (std::int64_t r = 0; r < rows; ++r) {
            const __m512i a = with_bias<decltype(has_bias)::value>(
                _mm512_maskz_loadu_epi32(k, acc + r * ld + c), b, overflow);
            __m512i q = fixed_point16<decltype(shifts)::value>(a, f, l);
            q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), z);
            _mm512_mask_cvtepi32_storeu_epi8(out + r * ldo + c, k, q);
          }
        };
        if (any_left) rows_with(std::true_type{});
        else rows_with(std::false_type{});
      });
}

bool store_conv_dequant_avx512(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                               std::int64_t cols, const std::int32_t* bias_i32, float sx,
                               const float* sw, const float* bias, float lo, float hi, float* out,
                               std::int64_t ldo) {
  const __m512 vsx = _mm512_set1_ps(sx), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  return by_channel_blocks(
      cols, bias_i32,
      [&](auto has_bias, std::int64_t c, __mmask16 k, __m512i bi, __m512i& overflow) {
        const __m512 w = _mm512_maskz_loadu_ps(k, sw + c);
        const __m512 b = bias ? _mm512_maskz_loadu_ps(k, bias + c) : _mm512_setzero_ps();
        for (std::int64_t r = 0; r < rows; ++r) {
          const __m512i a = with_bias<decltype(has_bias)::value>(
              _mm512_maskz_loadu_epi32(k, acc + r * ld + c), bi, overflow);
          __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(a), vsx), w);
          if (bias) v = _mm512_add_ps(v, b);
          v = _mm512_max_ps(vlo, _mm512_min_ps(vhi, v));  // the AVX2 store's operand order
          _mm512_mask_storeu_ps(out + r * ldo + c, k, v);
        }
      });
}

}  // namespace qforge::cpu_x86
