// The direct depthwise convolution kernel in AVX-512 VNNI (compiled with the tier's flags).
// Taps go in pairs: the input codes x of two taps (int16) are interleaved channel by channel
// and multiplied by the matching pair of centered weights w - zw with vpdpwssd, which adds
// both products into an int32 lane (|x| <= 255 and |w - zw| <= 255, so a pair sum fits): 32
// channels and two taps in two instructions, where the AVX2 kernel spends a vpmulld per tap
// and 8 channels. The pairs are fixed (taps 2j and 2j + 1 in window order): a tap outside the
// input reads a row of zx codes and an odd last tap pairs with a zero weight, so every channel
// sums x * (w - zw) over all its taps with pads holding zx, and its sums start from
// -zx * sum(w - zw), which makes them sum (x - zx)(w - zw) exactly (wrapping int32). vpunpck
// interleaves within 128-bit lanes, so the weight pairs are stored in that order (ConvWeights) and
// the sums are put back in channel order before the store.
#include <immintrin.h>

#include "conv_kernels.h"

namespace qforge::cpu_x86 {
namespace {

inline __m512i load_codes(const std::uint8_t* p, __mmask32 k, bool is_signed) {
  const __m256i b = _mm256_maskz_loadu_epi8(k, p);
  return is_signed ? _mm512_cvtepi8_epi16(b) : _mm512_cvtepu8_epi16(b);
}

}  // namespace

void depthwise_rows_avx512(const DepthwiseArgs& a, std::int64_t p0, std::int64_t p1,
                           std::int32_t* acc) {
  const std::int64_t C = a.c, taps = a.kh * a.kw, pairs = (taps + 1) / 2;
  // Channel order of the sums: lo holds channels 8L + 0..3 of each 128-bit lane L, hi 8L + 4..7.
  const __m512i first16 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i last16 =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  const std::uint8_t* x_tap[kDepthwiseAvx512MaxTaps + 1];
  for (std::int64_t p = p0; p < p1; ++p) {
    const std::int64_t oh = p / a.out_w, ow = p % a.out_w;
    std::int32_t* out = acc + (p - p0) * C;
    for (std::int64_t t = 0; t < 2 * pairs; ++t) {
      const std::int64_t kh = t / a.kw, kw = t % a.kw;
      const std::int64_t ih = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
      const std::int64_t iw = ow * a.stride_w - a.pad_left + kw * a.dilation_w;
      const bool inside = t < taps && ih >= 0 && ih < a.h && iw >= 0 && iw < a.w;
      x_tap[t] = inside ? a.x + (ih * a.w + iw) * C : a.zx_row;
    }
    for (std::int64_t ch = 0; ch < C; ch += 32) {
      const __mmask32 k = C - ch >= 32 ? ~__mmask32(0) : (__mmask32(1) << (C - ch)) - 1;
      const std::int16_t* w = a.pairs + (ch / 32) * pairs * 64;
      // The sums start from -zx * (sum of the channel's centered taps) (ConvWeights::dw_init).
      const std::int32_t* init = a.dw_init + (ch / 32) * 32;
      __m512i lo = _mm512_loadu_si512(init), hi = _mm512_loadu_si512(init + 16);
      for (std::int64_t j = 0; j < pairs; ++j, w += 64) {
        const __m512i x0 = load_codes(x_tap[2 * j] + ch, k, a.x_signed);
        const __m512i x1 = load_codes(x_tap[2 * j + 1] + ch, k, a.x_signed);
        lo = _mm512_dpwssd_epi32(lo, _mm512_unpacklo_epi16(x0, x1), _mm512_loadu_si512(w));
        hi = _mm512_dpwssd_epi32(hi, _mm512_unpackhi_epi16(x0, x1), _mm512_loadu_si512(w + 32));
      }
      const __m512i c0 = _mm512_permutex2var_epi32(lo, first16, hi);
      const __m512i c1 = _mm512_permutex2var_epi32(lo, last16, hi);
      const std::int64_t left = C - ch;
      _mm512_mask_storeu_epi32(out + ch,
                               left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1), c0);
      if (left > 16)
        _mm512_mask_storeu_epi32(
            out + ch + 16, left >= 32 ? __mmask16(0xFFFF) : __mmask16((1u << (left - 16)) - 1), c1);
    }
  }
}

}  // namespace qforge::cpu_x86
