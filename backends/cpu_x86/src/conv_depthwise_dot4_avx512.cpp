// The four-tap depthwise convolution kernel in AVX-512 VNNI (compiled with the tier's flags).
// vpdpbusd multiplies the 4 unsigned bytes of each int32 lane by 4 signed bytes and adds the sum
// to the lane: with the bytes of 4 horizontal taps of one channel in a lane, one instruction does
// 4 taps x 16 channels, so a 3x3 window costs 3 of them per 16 outputs (the 4th tap's weight is
// 0), where the int16 pair kernel (conv_depthwise_avx512.cpp) spends 10 widenings and unpacks
// on port 5 per 32 channels. The input is rearranged for it once per input row and block of 16
// channels: a "line" holds, for each output column and group of 4 taps, the 4 input bytes those
// taps read (pads hold zx's code); the kh kernel rows of an output row read kh lines, and
// successive output rows of a task reuse the lines they share (a ring of (kh - 1) * dilation + 1).
// Int8 X is read as X + 128 (the sign bit flipped), which vpdpbusd's unsigned operand needs; the
// caller's initial sums use zx + 128 to match. Exact: each lane sums (x - zx) * (w - zw) over all
// taps, pads included (they add (zx - zx) * w), in wrapping int32.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "conv_kernels.h"
#include "conv_requant_avx512.h"

// GCC 12 reports the unmasked AVX-512 intrinsics' internal _mm512_undefined_* operands as "may be
// used uninitialized" once inlined (a false positive: those operands are fully overwritten).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace qforge::cpu_x86 {
namespace {

// 16 input codes of channels [c0, c0 + 16) at column iw of row `src` (zx's code outside), each
// zero-extended into an int32 lane after the sign flip.
inline __m512i codes16(const std::uint8_t* src, std::int64_t iw, std::int64_t w, std::int64_t c,
                       __m128i flip, __m512i zx) {
  if (iw < 0 || iw >= w) return zx;
  return _mm512_cvtepu8_epi32(
      _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + iw * c)), flip));
}

// One line: for output columns [0, out_w) and groups g < groups, the 16 lanes of 4 tap bytes.
// KW > 0 fixes the kernel width at compile time (3: the common window, one group).
template <int KW>
void build_line(const DepthwiseDot4Args& a, const std::uint8_t* src, std::int64_t groups,
                __m128i flip, __m512i zx, std::int32_t* line) {
  const std::int64_t kw = KW > 0 ? KW : a.kw;
  // Columns whose whole window lies inside the input: [in_lo, in_hi).
  const std::int64_t last_left = a.w - 1 + a.pad_left - (kw - 1) * a.dilation_w;
  const std::int64_t in_lo = std::min(a.out_w, (a.pad_left + a.stride_w - 1) / a.stride_w);
  const std::int64_t in_hi =
      std::max(in_lo, std::min(a.out_w, last_left < 0 ? 0 : last_left / a.stride_w + 1));
  auto general = [&](std::int64_t ow) {
    for (std::int64_t g = 0; g < groups; ++g) {
      __m512i v = _mm512_setzero_si512();
      for (std::int64_t j = 0; j < 4 && 4 * g + j < kw; ++j) {
        const std::int64_t iw = ow * a.stride_w - a.pad_left + (4 * g + j) * a.dilation_w;
        v = _mm512_or_si512(v, _mm512_slli_epi32(codes16(src, iw, a.w, a.c, flip, zx),
                                                 static_cast<unsigned>(8 * j)));
      }
      _mm512_storeu_si512(line + (ow * groups + g) * 16, v);
    }
  };
  for (std::int64_t ow = 0; ow < in_lo; ++ow) general(ow);
  if constexpr (KW == 3) {
    const std::int64_t step = a.stride_w * a.c, dil = a.dilation_w * a.c;
    const std::uint8_t* p = src + (in_lo * a.stride_w - a.pad_left) * a.c;
    auto load = [&](const std::uint8_t* q) {
      return _mm512_cvtepu8_epi32(
          _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)), flip));
    };
    std::int64_t ow = in_lo;
    if (a.stride_w == 1 && a.dilation_w == 1 && in_hi > in_lo) {
      // Neighbouring columns share two of their three pixels: each pixel is loaded and widened
      // once, and kept in the two shifted forms the next columns need.
      __m512i b0 = load(p), b1_8 = _mm512_slli_epi32(load(p + a.c), 8);
      for (p += 2 * a.c; ow < in_hi; ++ow, p += a.c) {
        const __m512i b2 = load(p);
        // b0 | b1 << 8 | b2 << 16 in one ternary-logic instruction (0xFE: a | b | c).
        _mm512_storeu_si512(line + ow * 16,
                            _mm512_ternarylogic_epi32(b0, b1_8, _mm512_slli_epi32(b2, 16), 0xFE));
        b0 = _mm512_srli_epi32(b1_8, 8);
        b1_8 = _mm512_slli_epi32(b2, 8);
      }
    }
    for (; ow < in_hi; ++ow, p += step) {
      const __m512i b0 = load(p), b1 = load(p + dil), b2 = load(p + 2 * dil);
      _mm512_storeu_si512(
          line + ow * 16,
          _mm512_ternarylogic_epi32(b0, _mm512_slli_epi32(b1, 8), _mm512_slli_epi32(b2, 16), 0xFE));
    }
  } else {
    for (std::int64_t ow = in_lo; ow < in_hi; ++ow) general(ow);
  }
  for (std::int64_t ow = in_hi; ow < a.out_w; ++ow) general(ow);
}

// What a block does with its sums: stores them, or requantizes them in registers (float
// multipliers; fixed point in the general form without and with left shifts, or in the shorter
// form when every channel of the block takes it) and stores the output bytes.
enum class Out { sums, scaled, fixed, fixed_left, fixed_right };

template <int KW, Out kOut>
void block(const DepthwiseDot4Args& a, std::int64_t oh0, std::int64_t oh1, std::int64_t c0,
           std::int32_t* acc) {
  const std::int64_t kw = KW > 0 ? KW : a.kw, groups = (kw + 3) / 4;
  // Locals: the output stores may alias anything, which would reload fields of `a`.
  const std::int64_t out_w = a.out_w, channels = a.c;
  std::uint8_t* const y = a.y;
  const std::int64_t line_size = a.out_w * groups * 16;
  const std::int64_t ring = (a.kh - 1) * a.dilation_h + 1;
  // The ring of lines (slot ih % ring) and, past it, the line of a missing input row: zx's code
  // in every byte (its taps then add (zx - zx) * w like the pads).
  thread_local std::vector<std::int32_t> lines;
  thread_local std::vector<std::int64_t> tags;
  thread_local std::uint64_t tagged_call = 0;
  thread_local const std::uint8_t* tagged_x = nullptr;
  thread_local std::int64_t tagged_c0 = -1;
  if (tagged_call != a.call || tagged_x != a.x || tagged_c0 != c0 ||
      tags.size() != static_cast<std::size_t>(ring) ||
      lines.size() != static_cast<std::size_t>((ring + 1) * line_size)) {
    lines.resize(static_cast<std::size_t>((ring + 1) * line_size));
    tags.assign(static_cast<std::size_t>(ring), -1);
    tagged_call = a.call;
    tagged_x = a.x;
    tagged_c0 = c0;
  }
  const __m128i flip = _mm_set1_epi8(a.x_signed ? static_cast<char>(0x80) : 0);
  const __m512i zx = _mm512_set1_epi32(a.zx_code);
  std::int32_t* zx_line = lines.data() + ring * line_size;
  const __m512i zx4 = _mm512_set1_epi32(static_cast<int>(0x01010101u * a.zx_code));
  for (std::int64_t i = 0; i < line_size; i += 16) _mm512_storeu_si512(zx_line + i, zx4);

  const __m512i init = _mm512_loadu_si512(a.init + c0);
  // The requantization's constants for these 16 channels, the AVX-512 epilogue's arithmetic
  // (store_requant_columns_avx512, store_requant_fixed_avx512) lane for lane.
  [[maybe_unused]] const DepthwiseRequant* r = a.requant;
  [[maybe_unused]] __m512 multiplier, f_lo, f_hi;
  [[maybe_unused]] __m512i zy, q_lo, q_hi, left;
  // The output codes are made signed bytes, q - offset in [-128, 127] (offset 128 when
  // qmin >= 0: a uint8 output, or an int8 one clamped to [0, 127]), so that four columns narrow
  // with signed saturating packs that change no value; flipping bit 7 of each byte then adds the
  // offset back modulo 256, which gives the output byte.
  [[maybe_unused]] const std::int32_t offset = r && r->qmin >= 0 ? 128 : 0;
  [[maybe_unused]] const __m512i offset_dwords = _mm512_set1_epi32(offset);
  [[maybe_unused]] const __m512i offset_bytes = _mm512_set1_epi8(static_cast<char>(offset));
  [[maybe_unused]] FixedChannels fixed(_mm512_setzero_si512(), _mm512_setzero_si512());
  [[maybe_unused]] FixedChannelsRight right(_mm512_setzero_si512(), _mm512_set1_epi32(1));
  [[maybe_unused]] __m512i order;
  if constexpr (kOut == Out::scaled) {
    multiplier = _mm512_loadu_ps(r->multiplier + c0);
    f_lo = _mm512_set1_ps(static_cast<float>(r->qmin - r->zy));
    f_hi = _mm512_set1_ps(static_cast<float>(r->qmax - r->zy));
    zy = _mm512_set1_epi32(r->zy - offset);
  } else if constexpr (kOut != Out::sums) {
    if constexpr (kOut == Out::fixed_right) {
      right =
          FixedChannelsRight::load(r->fixed_table + c0 / 16 * kFixedTableWords + kFixedRightWord);
      order = high_dwords();
    } else {
      fixed = FixedChannels::load(r->fixed_table + c0 / 16 * kFixedTableWords);
      left = _mm512_loadu_si512(r->left + c0);
    }
    // clamp(h + zy, qmin, qmax) as clamp(h, qmin - zy, qmax - zy) + zy: h + zy may leave int32
    // (the general form's left shifts saturate to the int32 bounds).
    zy = _mm512_set1_epi32(r->zy - offset);
    q_lo = _mm512_set1_epi32(r->qmin - r->zy);
    q_hi = _mm512_set1_epi32(r->qmax - r->zy);
  }
  // The short form's |h| is at most 2^30 + 1 (|x| <= 2^31, m < 2^31, a right shift of 1 or
  // more), so h + zy - offset stays inside int32: the signed saturation to bytes (the packs,
  // vpmovsdb) clamps it to [-128, 127] and a byte clamp to [qmin, qmax] - offset, once per four
  // columns, finishes clamp(h + zy, qmin, qmax) - offset.
  constexpr bool kByteClamp = kOut == Out::fixed_right;
  [[maybe_unused]] __m512i b_lo, b_hi;
  if constexpr (kByteClamp) {
    b_lo = _mm512_set1_epi8(static_cast<char>(r->qmin - offset));
    b_hi = _mm512_set1_epi8(static_cast<char>(r->qmax - offset));
  }
  // The output codes less offset of 16 sums.
  [[maybe_unused]] auto requant = [&](__m512i s) {
    if constexpr (kOut == Out::scaled) {
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(s), multiplier);
      v = _mm512_min_ps(_mm512_max_ps(v, f_lo), f_hi);
      return _mm512_add_epi32(
          _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zy);
    } else {
      __m512i q;
      if constexpr (kByteClamp) return _mm512_add_epi32(fixed_point16_right(s, right, order), zy);
      else q = fixed_point16<kOut == Out::fixed_left>(s, fixed, left);
      return _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, q_lo), q_hi), zy);
    }
  };
  auto emit = [&](std::int64_t oh, std::int64_t ow, __m512i s) {
    if constexpr (kOut == Out::sums) {
      _mm512_storeu_si512(acc + ((oh - oh0) * out_w + ow) * 16, s);
    } else if constexpr (kByteClamp) {
      const __m128i v = _mm_min_epi8(
          _mm_max_epi8(_mm512_cvtsepi32_epi8(requant(s)), _mm512_castsi512_si128(b_lo)),
          _mm512_castsi512_si128(b_hi));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + ((oh * out_w + ow) * channels + c0)),
                       _mm_xor_si128(v, _mm512_castsi512_si128(offset_bytes)));
    } else {
      // q = requant(s) + offset is inside [qmin, qmax]: the byte is its low 8 bits.
      _mm512_mask_cvtepi32_storeu_epi8(y + ((oh * out_w + ow) * channels + c0), 0xFFFF,
                                       _mm512_xor_si512(requant(s), offset_dwords));
    }
  };
  // Four columns at once, narrowed by three packs and one permutation on port 5 where emit's
  // narrowing store takes two port-5 operations per column; the stores are masked ones, which
  // need no port 5 (an extraction would).
  [[maybe_unused]] const __m512i columns =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  [[maybe_unused]] auto emit4 = [&](std::int64_t oh, std::int64_t ow, __m512i s0, __m512i s1,
                                    __m512i s2, __m512i s3) {
    // Byte 16 l + 4 j + i of the packs: column j's channel 4 l + i.
    __m512i b = _mm512_packs_epi16(_mm512_packs_epi32(requant(s0), requant(s1)),
                                   _mm512_packs_epi32(requant(s2), requant(s3)));
    if constexpr (kByteClamp) b = _mm512_min_epi8(_mm512_max_epi8(b, b_lo), b_hi);
    const __m512i v = _mm512_permutexvar_epi32(columns, _mm512_xor_si512(b, offset_bytes));
    std::uint8_t* const out = y + ((oh * out_w + ow) * channels + c0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_castsi512_si128(v));
    // Column j's 16 bytes, lane j of v, by a store of v masked to that lane from 16 j bytes before
    // the column (channels >= 16, so that address lies inside the output).
    for (int j = 1; j < 4; ++j)
      _mm512_mask_storeu_epi32(out + j * (channels - 16), static_cast<__mmask16>(0xF << (4 * j)),
                               v);
  };
  // Step t = k * groups + g of a window: kernel row k's line, group g (the caller keeps
  // kh * groups <= kDepthwiseDot4MaxSteps); its 16 channels' 4 weights at quads + t * c * 4.
  const std::int32_t* row_line[kDepthwiseDot4MaxSteps];
  for (std::int64_t oh = oh0; oh < oh1; ++oh) {
    std::int64_t n = 0;
    for (std::int64_t k = 0; k < a.kh; ++k) {
      const std::int64_t ih = oh * a.stride_h - a.pad_top + k * a.dilation_h;
      const std::int32_t* line = zx_line;
      if (ih >= 0 && ih < a.h) {
        const std::int64_t slot = ih % ring;
        std::int32_t* own = lines.data() + slot * line_size;
        if (tags[static_cast<std::size_t>(slot)] != ih) {
          build_line<KW>(a, a.x + ih * a.w * a.c + c0, groups, flip, zx, own);
          tags[static_cast<std::size_t>(slot)] = ih;
        }
        line = own;
      }
      for (std::int64_t g = 0; g < groups; ++g, ++n) row_line[n] = line + g * 16;
    }
    const std::int64_t stride = groups * 16;
    if (KW == 3 && a.kh == 3) {
      const std::int8_t* q = a.quads + c0 * 4;
      const __m512i w0 = _mm512_loadu_si512(q), w1 = _mm512_loadu_si512(q + a.c * 4),
                    w2 = _mm512_loadu_si512(q + 2 * a.c * 4);
      const std::int32_t *l0 = row_line[0], *l1 = row_line[1], *l2 = row_line[2];
      auto sum = [&](std::int64_t ow) {
        const std::int64_t at = ow * 16;
        __m512i s = _mm512_dpbusd_epi32(init, _mm512_loadu_si512(l0 + at), w0);
        s = _mm512_dpbusd_epi32(s, _mm512_loadu_si512(l1 + at), w1);
        return _mm512_dpbusd_epi32(s, _mm512_loadu_si512(l2 + at), w2);
      };
      std::int64_t ow = 0;
      if constexpr (kOut != Out::sums)
        for (; ow + 4 <= out_w; ow += 4)
          emit4(oh, ow, sum(ow), sum(ow + 1), sum(ow + 2), sum(ow + 3));
      for (; ow < out_w; ++ow) emit(oh, ow, sum(ow));
    } else {
      auto sum = [&](std::int64_t ow) {
        __m512i s = init;
        for (std::int64_t t = 0; t < n; ++t) {
          const __m512i w = _mm512_loadu_si512(a.quads + (t * a.c + c0) * 4);
          s = _mm512_dpbusd_epi32(s, _mm512_loadu_si512(row_line[t] + ow * stride), w);
        }
        return s;
      };
      std::int64_t ow = 0;
      if constexpr (kOut != Out::sums)
        for (; ow + 4 <= out_w; ow += 4)
          emit4(oh, ow, sum(ow), sum(ow + 1), sum(ow + 2), sum(ow + 3));
      for (; ow < out_w; ++ow) emit(oh, ow, sum(ow));
    }
  }
}

}  // namespace

void depthwise_dot4_block_avx512(const DepthwiseDot4Args& a, std::int64_t oh0, std::int64_t oh1,
                                 std::int64_t c0, std::int32_t* acc) {
  // The fixed-point form is chosen per block of 16 channels (fixed_table_avx512's flag): one
  // channel with a multiplier of 0.5 or more leaves only its own block on the general form.
  const DepthwiseRequant* r = a.requant;
  Out out = Out::sums;
  if (r && !r->fixed) out = Out::scaled;
  if (r && r->fixed) {
    const bool short_form = r->fixed_table[c0 / 16 * kFixedTableWords + kFixedFormWord] != 0;
    out = short_form ? Out::fixed_right : r->any_left ? Out::fixed_left : Out::fixed;
  }
  auto with = [&](auto kw) {
    constexpr int KW = decltype(kw)::value;
    switch (out) {
      case Out::sums: return block<KW, Out::sums>(a, oh0, oh1, c0, acc);
      case Out::scaled: return block<KW, Out::scaled>(a, oh0, oh1, c0, acc);
      case Out::fixed: return block<KW, Out::fixed>(a, oh0, oh1, c0, acc);
      case Out::fixed_left: return block<KW, Out::fixed_left>(a, oh0, oh1, c0, acc);
      case Out::fixed_right: return block<KW, Out::fixed_right>(a, oh0, oh1, c0, acc);
    }
  };
  if (a.kw == 3) with(std::integral_constant<int, 3>{});
  else with(std::integral_constant<int, 0>{});
}

}  // namespace qforge::cpu_x86
