// TFLite's fixed-point requantization for 16 int32 lanes in AVX-512, shared by the convolution
// epilogue (conv_epilogue_avx512.cpp) and the four-tap depthwise kernel, which requantizes its
// sums in registers (conv_depthwise_dot4_avx512.cpp). Include only from translation units
// compiled with the AVX-512 VNNI tier's flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace qforge::cpu_x86 {

// Lanes whose sign bit is set (_mm512_movepi32_mask needs AVX-512 DQ, outside the tier's flags).
inline __mmask16 negative_lanes(__m512i v) {
  return _mm512_cmplt_epi32_mask(v, _mm512_setzero_si512());
}

// The per-channel constants of fixed_point16 for 16 channels, in the two halves that
// _mm512_mul_epi32 multiplies (even: channels 0, 2, ..; odd: 1, 3, ..; one 64-bit lane each).
struct FixedChannels {
  __m512i m_even, m_odd;            // the multipliers
  __m512i add_even[2], add_odd[2];  // the rounding addend, [0] when h >= 0, [1] when h < 0
  __m512i shift_even, shift_odd;    // 31 + the right shift

  // The table form (conv_kernels.h, kFixedTableWords int64 per 16 channels): the members in
  // declaration order, 8 int64 each, so that a convolution computes them once per channel.
  static FixedChannels load(const std::int64_t* block) {
    FixedChannels f;
    __m512i* const v[] = {&f.m_even,     &f.m_odd,      &f.add_even[0], &f.add_even[1],
                          &f.add_odd[0], &f.add_odd[1], &f.shift_even,  &f.shift_odd};
    for (int i = 0; i < 8; ++i) *v[i] = _mm512_loadu_si512(block + 8 * i);
    return f;
  }
  void store(std::int64_t* block) const {
    const __m512i v[] = {m_even,     m_odd,      add_even[0], add_even[1],
                         add_odd[0], add_odd[1], shift_even,  shift_odd};
    for (int i = 0; i < 8; ++i) _mm512_storeu_si512(block + 8 * i, v[i]);
  }

  FixedChannels(__m512i m, __m512i right) {
    m_even = m;
    m_odd = _mm512_srli_epi64(m, 32);
    const __m512i e_even = _mm512_and_si512(right, _mm512_set1_epi64(0xffffffff));
    const __m512i e_odd = _mm512_srli_epi64(right, 32);
    halves(e_even, add_even, shift_even);
    halves(e_odd, add_odd, shift_odd);
  }

 private:
  FixedChannels() = default;

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

// fixed_point16 for channels whose multiplier m >= 0 has no left shift and a right shift e in
// [1, 31] (a real multiplier below 0.5: every convolution layer of the usual kind), in fewer
// instructions. Both roundings stay one floor, r = floor(x / 2^(31+e)) for x = p + 2^30 +
// 2^(30+e) - [p < -2^30] 2^31 (fixed_point16's x; |x| < 2^63), but since 31 + e >= 32 that is
// floor(hi(x) / 2^(e-1)) with hi(x) the high dword of x: one permutation gathers the high dwords
// of both halves into channel order and one 32-bit arithmetic shift finishes all 16 lanes,
// where fixed_point16 shifts each half in 64 bits and blends. The odd channels come to the low
// dwords by a dword shuffle (port 5) rather than a 64-bit shift (port 0, which the multiplies
// and shifts already load), and the rounding choice is a masked subtract of 2^31 after the
// addend. 11 vector instructions per 16 lanes against fixed_point16's 13, 3 of them on port 0
// only against 6.
struct FixedChannelsRight {
  __m512i m;                  // the multipliers, channel order (the even ones in the low dwords)
  __m512i m_odd;              // the odd channels' multipliers in the low dwords
  __m512i add_even, add_odd;  // 2^30 + 2^(30+e) per 64-bit lane
  __m512i shift;              // e - 1 per channel (dwords)

  static constexpr int kVectors = 5;
  static FixedChannelsRight load(const std::int64_t* block) {
    FixedChannelsRight f;
    __m512i* const v[] = {&f.m, &f.m_odd, &f.add_even, &f.add_odd, &f.shift};
    for (int i = 0; i < kVectors; ++i) *v[i] = _mm512_loadu_si512(block + 8 * i);
    return f;
  }
  void store(std::int64_t* block) const {
    const __m512i v[] = {m, m_odd, add_even, add_odd, shift};
    for (int i = 0; i < kVectors; ++i) _mm512_storeu_si512(block + 8 * i, v[i]);
  }

  // right: e per channel, each in [1, 31] (the caller checks; lanes it does not use may hold 1).
  FixedChannelsRight(__m512i multiplier, __m512i right) {
    m = multiplier;
    m_odd = _mm512_shuffle_epi32(multiplier, _MM_PERM_DDBB);
    const __m512i base = _mm512_set1_epi64(std::int64_t{1} << 30);
    const __m512i e_even = _mm512_and_si512(right, _mm512_set1_epi64(0xffffffff));
    const __m512i e_odd = _mm512_srli_epi64(right, 32);
    add_even = _mm512_add_epi64(base, _mm512_sllv_epi64(base, e_even));
    add_odd = _mm512_add_epi64(base, _mm512_sllv_epi64(base, e_odd));
    shift = _mm512_sub_epi32(right, _mm512_set1_epi32(1));
  }

 private:
  FixedChannelsRight() = default;
};

// Where each form lies in a block of the fixed-point table (conv_kernels.h, kFixedTableWords int64
// per 16 channels; fixed_table_avx512 fills it): FixedChannels from word 0, FixedChannelsRight
// from kFixedRightWord, and at kFixedFormWord 1 when every channel of the block takes the
// shorter form (no left shift, a right shift in [1, 31]), else 0.
inline constexpr std::int64_t kFixedRightWord = 64;
inline constexpr std::int64_t kFixedFormWord = kFixedRightWord + 8 * FixedChannelsRight::kVectors;

// Dword j of the result: the high dword of the even half's lane j / 2 (j even) or of the odd
// half's (j odd), for _mm512_permutex2var_epi32(even, high_dwords(), odd).
inline __m512i high_dwords() {
  return _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
}

// reference::multiply_by_quantized_multiplier for 16 lanes whose channels FixedChannelsRight
// holds (see there); `order` is high_dwords(). h < 0 exactly when p < -2^30 (fixed_point16).
inline __m512i fixed_point16_right(__m512i a, const FixedChannelsRight& f, __m512i order) {
  const __m512i limit = _mm512_set1_epi64(-(std::int64_t{1} << 30));
  const __m512i unit = _mm512_set1_epi64(std::int64_t{1} << 31);
  const __m512i pe = _mm512_mul_epi32(a, f.m);
  const __m512i po = _mm512_mul_epi32(_mm512_shuffle_epi32(a, _MM_PERM_DDBB), f.m_odd);
  __m512i xe = _mm512_add_epi64(pe, f.add_even);
  __m512i xo = _mm512_add_epi64(po, f.add_odd);
  xe = _mm512_mask_sub_epi64(xe, _mm512_cmplt_epi64_mask(pe, limit), xe, unit);
  xo = _mm512_mask_sub_epi64(xo, _mm512_cmplt_epi64_mask(po, limit), xo, unit);
  return _mm512_srav_epi32(_mm512_permutex2var_epi32(xe, order, xo), f.shift);
}

}  // namespace qforge::cpu_x86
