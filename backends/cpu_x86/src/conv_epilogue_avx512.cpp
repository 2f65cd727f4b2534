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

// GCC 12 reports the unmasked AVX-512 intrinsics' internal _mm512_undefined_* operands as "may be
// used uninitialized" once inlined (a false positive: those operands are fully overwritten).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace qforge::cpu_x86 {
namespace {

// Lanes whose sign bit is set (_mm512_movepi32_mask needs AVX-512 DQ, outside the tier's flags).
inline __mmask16 negative_lanes(__m512i v) {
  return _mm512_cmplt_epi32_mask(v, _mm512_setzero_si512());
}

inline __mmask16 tail_mask(std::int64_t valid) {
  return valid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1);
}

// The per-channel constants of fixed_point16 for 16 channels, in the two halves that
// _mm512_mul_epi32 multiplies (even: channels 0, 2, ..; odd: 1, 3, ..; one 64-bit lane each).
struct FixedChannels {
  __m512i m_even, m_odd;            // the multipliers
  __m512i add_even[2], add_odd[2];  // the rounding addend, [0] when h >= 0, [1] when h < 0
  __m512i shift_even, shift_odd;    // 31 + the right shift

  FixedChannels(__m512i m, __m512i right) {
    m_even = m;
    m_odd = _mm512_srli_epi64(m, 32);
    const __m512i e_even = _mm512_and_si512(right, _mm512_set1_epi64(0xffffffff));
    const __m512i e_odd = _mm512_srli_epi64(right, 32);
    halves(e_even, add_even, shift_even);
    halves(e_odd, add_odd, shift_odd);
  }

 private:
  // For a right shift e: 2^30 + k * 2^31 with k = 2^(e-1) (h >= 0) or 2^(e-1) - 1 (h < 0), k = 0
  // when e = 0 (see fixed_point16).
  static void halves(__m512i e, __m512i (&add)[2], __m512i& shift) {
    const __m512i base = _mm512_set1_epi64(std::int64_t{1} << 30);
    const __mmask8 positive = _mm512_cmpgt_epi64_mask(e, _mm512_setzero_si512());
    add[0] = _mm512_add_epi64(base, _mm512_maskz_sllv_epi64(positive, base, e));
    add[1] =
        _mm512_mask_sub_epi64(add[0], positive, add[0], _mm512_set1_epi64(std::int64_t{1} << 31));
    shift = _mm512_add_epi64(e, _mm512_set1_epi64(31));
  }
};

// One half of fixed_point16: the 64-bit products a * m of its lanes, both roundings in one
// arithmetic shift; the result in the low 32 bits of each lane.
inline __m512i fixed_half(__m512i a, __m512i m, const __m512i (&add)[2], __m512i shift) {
  const __m512i p = _mm512_mul_epi32(a, m);
  const __mmask8 negative = _mm512_cmplt_epi64_mask(p, _mm512_set1_epi64(-(std::int64_t{1} << 30)));
  return _mm512_srav_epi64(_mm512_add_epi64(p, _mm512_mask_blend_epi64(negative, add[0], add[1])),
                           shift);
}

// reference::multiply_by_quantized_multiplier for 16 lanes: the saturating left shift, then
// rounding_divide_by_pot(saturating_rounding_doubling_high_mul(a, m), e), both roundings in
// one 64-bit arithmetic shift. The high multiply is h = floor((p + 2^30) / 2^31) for p = a * m
// (the reference's sign-dependent nudge with truncation gives the same; m >= 0, so a = m =
// INT32_MIN never occurs). rounding_divide_by_pot adds 1 to floor(h / 2^e) when h's remainder
// exceeds 2^(e-1) - 1 + (h < 0), which is floor((h + k) / 2^e) with k = 2^(e-1) - (h < 0)
// (0 <= k < 2^e; k = 0 when e = 0), and floor(floor(x / 2^31 + k) / 2^e) = floor((x + k 2^31)
// / 2^(31+e)) for x = p + 2^30. h < 0 exactly when x < 0. |p| < 2^62 and k 2^31 <= 2^61, so the
// sum fits int64; the result fits int32. kLeft: some channel has a left shift (a multiplier of
// 1 or more); without one, x << 0 is x and the saturation never applies, so that step is
// skipped.
template <bool kLeft>
inline __m512i fixed_point16(__m512i x, const FixedChannels& f, __m512i left) {
  __m512i a = x;
  if constexpr (kLeft) {
    const __m512i shifted = _mm512_sllv_epi32(x, left);
    const __mmask16 exact = _mm512_cmpeq_epi32_mask(_mm512_srav_epi32(shifted, left), x);
    const __m512i sat = _mm512_mask_blend_epi32(negative_lanes(x), _mm512_set1_epi32(0x7fffffff),
                                                _mm512_set1_epi32(static_cast<int>(0x80000000u)));
    a = _mm512_mask_blend_epi32(exact, sat, shifted);
  }
  const __m512i even = fixed_half(a, f.m_even, f.add_even, f.shift_even);
  const __m512i odd = fixed_half(_mm512_srli_epi64(a, 32), f.m_odd, f.add_odd, f.shift_odd);
  return _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
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
