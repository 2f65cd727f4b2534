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

// Both forms and the flag fit a block.
static_assert(8 * 8 <= kFixedRightWord && kFixedFormWord < kFixedTableWords);

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

// The requantized outputs of one row: h (int32, per 16 channels) becomes the byte
// clamp(h + zy, qmin, qmax). Whole groups of 64 channels narrow four vectors at once with the
// saturating packs, one 64-byte store: int16 saturation keeps every h outside [-32768, 32767] on
// its side of the range (|zy| <= 255 and the range lies within the byte's), the add of zy
// saturates likewise, and the byte pack saturates to the output type's bounds, inside which the
// clamp to [qmin, qmax] is exact. The packs work within 128-bit lanes, so one permutation puts
// the dwords back in channel order. A last partial group goes 16 channels at a time, clamped in
// int32 (h + zy may leave int32: clamp(h, qmin - zy, qmax - zy) + zy instead).
struct ByteOut {
  bool is_signed;  // int8 output (qmin < 0); uint8 otherwise (its range then lies in [0, 127]
                   // or in [0, 255]: the unsigned pack serves both)
  __m512i z16, lo8, hi8;  // zy as int16, qmin and qmax as bytes
  __m512i z32, lo, hi;    // zy, qmin - zy and qmax - zy as int32
  __m512i order;          // the permutation of dwords after the packs

  ByteOut(std::int32_t zy, std::int32_t qmin, std::int32_t qmax)
      : is_signed(qmin < 0),
        z16(_mm512_set1_epi16(static_cast<short>(zy))),
        lo8(_mm512_set1_epi8(static_cast<char>(qmin))),
        hi8(_mm512_set1_epi8(static_cast<char>(qmax))),
        z32(_mm512_set1_epi32(zy)),
        lo(_mm512_set1_epi32(qmin - zy)),
        hi(_mm512_set1_epi32(qmax - zy)),
        // dword j of the result (channels 4 j .. 4 j + 3) is dword 4 (j % 4) + j / 4 of the packs
        order(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)) {}

  void store64(__m512i h0, __m512i h1, __m512i h2, __m512i h3, std::uint8_t* out) const {
    const __m512i s01 = _mm512_adds_epi16(_mm512_packs_epi32(h0, h1), z16);
    const __m512i s23 = _mm512_adds_epi16(_mm512_packs_epi32(h2, h3), z16);
    __m512i b;
    if (is_signed) {
      b = _mm512_permutexvar_epi32(order, _mm512_packs_epi16(s01, s23));
      b = _mm512_min_epi8(_mm512_max_epi8(b, lo8), hi8);
    } else {
      b = _mm512_permutexvar_epi32(order, _mm512_packus_epi16(s01, s23));
      b = _mm512_min_epu8(_mm512_max_epu8(b, lo8), hi8);
    }
    _mm512_storeu_si512(out, b);
  }

  void store16(__m512i h, __mmask16 k, std::uint8_t* out) const {
    const __m512i q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(h, lo), hi), z32);
    _mm512_mask_cvtepi32_storeu_epi8(out, k, q);  // q is inside [qmin, qmax]: its low 8 bits
  }
};

// The requantizing stores' loop: per row, the sums (+ bias) of 16 channels through
// requant(c, k, a) -> h, written by ByteOut. Returns false when a sum + bias left int32.
template <bool kBias, class Requant>
bool requant_rows(const std::int32_t* acc, std::int64_t ld, std::int64_t rows, std::int64_t cols,
                  const std::int32_t* bias, const ByteOut& w, std::uint8_t* out, std::int64_t ldo,
                  const Requant& requant) {
  __m512i overflow = _mm512_setzero_si512();
  const std::int64_t whole = cols / 64 * 64;
  auto h = [&](const std::int32_t* row, std::int64_t c, __mmask16 k) {
    const __m512i b = kBias ? _mm512_maskz_loadu_epi32(k, bias + c) : _mm512_setzero_si512();
    return requant(c, k, with_bias<kBias>(_mm512_maskz_loadu_epi32(k, row + c), b, overflow));
  };
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int32_t* row = acc + r * ld;
    std::uint8_t* o = out + r * ldo;
    for (std::int64_t c = 0; c < whole; c += 64)
      w.store64(h(row, c, 0xFFFF), h(row, c + 16, 0xFFFF), h(row, c + 32, 0xFFFF),
                h(row, c + 48, 0xFFFF), o + c);
    for (std::int64_t c = whole; c < cols; c += 16) {
      const __mmask16 k = tail_mask(cols - c);
      w.store16(h(row, c, k), k, o + c);
    }
  }
  return negative_lanes(overflow) == 0;
}

// requant_rows for a table whose blocks are all FixedChannelsRight's: by groups of 64 channels
// (then of 16), the rows inside, so that a group's constants (5 vectors per 16 channels) stay in
// registers for all the rows instead of coming from the table again for each row (the uint8
// stores may alias the table, so the compiler cannot hoist those loads itself).
template <bool kBias>
bool requant_rows_right(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                        std::int64_t cols, const std::int32_t* bias, const ByteOut& w,
                        std::uint8_t* out, std::int64_t ldo, const std::int64_t* table) {
  __m512i overflow = _mm512_setzero_si512();
  const __m512i order = high_dwords();
  const std::int64_t whole = cols / 64 * 64;
  auto constants = [&](std::int64_t c) {
    return FixedChannelsRight::load(table + c / 16 * kFixedTableWords + kFixedRightWord);
  };
  auto h = [&](const std::int32_t* row, std::int64_t c, __mmask16 k, __m512i b,
               const FixedChannelsRight& f) {
    return fixed_point16_right(with_bias<kBias>(_mm512_maskz_loadu_epi32(k, row + c), b, overflow),
                               f, order);
  };
  auto bias16 = [&](std::int64_t c, __mmask16 k) {
    return kBias ? _mm512_maskz_loadu_epi32(k, bias + c) : _mm512_setzero_si512();
  };
  for (std::int64_t c = 0; c < whole; c += 64) {
    const FixedChannelsRight f0 = constants(c), f1 = constants(c + 16), f2 = constants(c + 32),
                             f3 = constants(c + 48);
    const __m512i b0 = bias16(c, 0xFFFF), b1 = bias16(c + 16, 0xFFFF), b2 = bias16(c + 32, 0xFFFF),
                  b3 = bias16(c + 48, 0xFFFF);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int32_t* row = acc + r * ld;
      w.store64(h(row, c, 0xFFFF, b0, f0), h(row, c + 16, 0xFFFF, b1, f1),
                h(row, c + 32, 0xFFFF, b2, f2), h(row, c + 48, 0xFFFF, b3, f3), out + r * ldo + c);
    }
  }
  for (std::int64_t c = whole; c < cols; c += 16) {
    const __mmask16 k = tail_mask(cols - c);
    const FixedChannelsRight f = constants(c);
    const __m512i b = bias16(c, k);
    for (std::int64_t r = 0; r < rows; ++r)
      w.store16(h(acc + r * ld, c, k, b, f), k, out + r * ldo + c);
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

void fixed_table_avx512(const std::int32_t* multiplier, const std::int32_t* left,
                        const std::int32_t* right, std::int64_t cols, std::int64_t* table) {
  for (std::int64_t c = 0; c < cols; c += 16) {
    const __mmask16 k = tail_mask(cols - c);
    std::int64_t* block = table + c / 16 * kFixedTableWords;
    const __m512i m = _mm512_maskz_loadu_epi32(k, multiplier + c);
    const __m512i l = _mm512_maskz_loadu_epi32(k, left + c);
    const __m512i e = _mm512_maskz_loadu_epi32(k, right + c);
    FixedChannels(m, e).store(block);
    // The channels past cols are never stored: any valid shift serves them.
    const __m512i one = _mm512_set1_epi32(1);
    const __mmask16 right_only = _mm512_mask_cmpeq_epi32_mask(k, l, _mm512_setzero_si512()) &
                                 _mm512_mask_cmpge_epi32_mask(k, e, one) &
                                 _mm512_mask_cmple_epi32_mask(k, e, _mm512_set1_epi32(31)) &
                                 _mm512_mask_cmpge_epi32_mask(k, m, _mm512_setzero_si512());
    const bool shorter = right_only == k;
    FixedChannelsRight(m, _mm512_mask_blend_epi32(k, one, e)).store(block + kFixedRightWord);
    block[kFixedFormWord] = shorter ? 1 : 0;
  }
}

bool store_requant_columns_avx512(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                                  std::int64_t cols, const std::int32_t* bias,
                                  const float* multiplier, std::int32_t zy, std::int32_t qmin,
                                  std::int32_t qmax, std::uint8_t* out, std::int64_t ldo) {
  const __m512 lo = _mm512_set1_ps(static_cast<float>(qmin - zy));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(qmax - zy));
  const ByteOut w(zy, qmin, qmax);
  auto requant = [&](std::int64_t c, __mmask16 k, __m512i a) {
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), _mm512_maskz_loadu_ps(k, multiplier + c));
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    // Rounding to nearest even in the conversion itself (embedded rounding, whatever MXCSR
    // holds): the value roundscale then truncation give, in one instruction. It lies in
    // [qmin - zy, qmax - zy] already.
    return _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  };
  return bias ? requant_rows<true>(acc, ld, rows, cols, bias, w, out, ldo, requant)
              : requant_rows<false>(acc, ld, rows, cols, bias, w, out, ldo, requant);
}

bool store_requant_fixed_avx512(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                                std::int64_t cols, const std::int32_t* bias,
                                const std::int64_t* table, const std::int32_t* left, bool any_left,
                                std::int32_t zy, std::int32_t qmin, std::int32_t qmax,
                                std::uint8_t* out, std::int64_t ldo) {
  const ByteOut w(zy, qmin, qmax);
  bool all_right = true;
  for (std::int64_t c = 0; c < cols; c += 16)
    all_right = all_right && table[c / 16 * kFixedTableWords + kFixedFormWord] != 0;
  if (all_right)
    return bias ? requant_rows_right<true>(acc, ld, rows, cols, bias, w, out, ldo, table)
                : requant_rows_right<false>(acc, ld, rows, cols, bias, w, out, ldo, table);
  const __m512i order = high_dwords();
  auto run = [&](auto shifts) {
    constexpr bool kLeft = decltype(shifts)::value;
    auto requant = [&](std::int64_t c, __mmask16 k, __m512i a) {
      const std::int64_t* block = table + c / 16 * kFixedTableWords;
      if (block[kFixedFormWord])  // the same branch for every row: predicted
        return fixed_point16_right(a, FixedChannelsRight::load(block + kFixedRightWord), order);
      const __m512i l = kLeft ? _mm512_maskz_loadu_epi32(k, left + c) : _mm512_setzero_si512();
      return fixed_point16<kLeft>(a, FixedChannels::load(block), l);
    };
    return bias ? requant_rows<true>(acc, ld, rows, cols, bias, w, out, ldo, requant)
                : requant_rows<false>(acc, ld, rows, cols, bias, w, out, ldo, requant);
  };
  return any_left ? run(std::true_type{}) : run(std::false_type{});
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
