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
//
// Pixels go a row at a time, their tap pointers stepped rather than recomputed. At stride 1 the
// pixels of a row whose whole window lies inside the input read, for each tap, one contiguous
// run of pixels x channels, so the kernel takes that run as one vector: 32 elements at a time
// whatever the channel count (16 channels: two pixels a block), with the weight tables covering
// lcm(C, 32) channels so that element e of the run finds channel e % C's weights
// (ConvWeights::dw_channels). The other pixels (the row's edges, strides above 1, channel counts
// whose period is too long) go one pixel at a time in blocks of 32 channels; under 32 channels
// the input rows are copied between columns of zx codes instead, so that whole rows run.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "conv_kernels.h"

namespace qforge::cpu_x86 {
namespace {

template <bool Signed>
inline __m512i load_codes(const std::uint8_t* p, __mmask32 k) {
  const __m256i b = _mm256_maskz_loadu_epi8(k, p);
  return Signed ? _mm512_cvtepi8_epi16(b) : _mm512_cvtepu8_epi16(b);
}

inline __mmask32 first_n(std::int64_t n) {
  return n >= 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1;
}

// 32 sums (`n` of them stored): element e of every tap's row (x_tap[t] + e) against table block
// w / init, the sums in order at out. Pairs > 0 fixes the count of tap pairs at compile time
// (3x3 windows: the loop unrolled), 0 takes `pairs`.
template <bool Signed, int Pairs>
inline void block32(const std::uint8_t* const* x_tap, std::int64_t e, std::int64_t pairs,
                    const std::int16_t* w, const std::int32_t* init, std::int64_t n,
                    std::int32_t* out) {
  // Channel order of the sums: lo holds elements 8L + 0..3 of each 128-bit lane L, hi 8L + 4..7.
  const __m512i first16 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i last16 =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  const __mmask32 k = first_n(n);
  __m512i lo = _mm512_loadu_si512(init), hi = _mm512_loadu_si512(init + 16);
  if (Pairs > 0) pairs = Pairs;
  for (std::int64_t j = 0; j < pairs; ++j, w += 64) {
    const __m512i x0 = load_codes<Signed>(x_tap[2 * j] + e, k);
    const __m512i x1 = load_codes<Signed>(x_tap[2 * j + 1] + e, k);
    lo = _mm512_dpwssd_epi32(lo, _mm512_unpacklo_epi16(x0, x1), _mm512_loadu_si512(w));
    hi = _mm512_dpwssd_epi32(hi, _mm512_unpackhi_epi16(x0, x1), _mm512_loadu_si512(w + 32));
  }
  const __m512i c0 = _mm512_permutex2var_epi32(lo, first16, hi);
  const __m512i c1 = _mm512_permutex2var_epi32(lo, last16, hi);
  _mm512_mask_storeu_epi32(out, n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1), c0);
  if (n > 16)
    _mm512_mask_storeu_epi32(out + 16,
                             n >= 32 ? __mmask16(0xFFFF) : __mmask16((1u << (n - 16)) - 1), c1);
}

template <bool Signed, int Pairs>
void rows(const DepthwiseArgs& a, std::int64_t p0, std::int64_t p1, std::int32_t* acc) {
  const std::int64_t C = a.c, taps = a.kh * a.kw, pairs = (taps + 1) / 2;
  const std::int64_t table_blocks = a.table_c / 32;
  // Runs of pixels need the table to repeat whole pixels and the pixels of a run to be adjacent.
  const bool runs = a.table_c % C == 0 && a.stride_w == 1;
  // Columns whose whole window lies inside the input: [in_lo, in_hi).
  const std::int64_t last_left = a.w - 1 + a.pad_left - (a.kw - 1) * a.dilation_w;
  const std::int64_t in_lo = std::min(a.out_w, (a.pad_left + a.stride_w - 1) / a.stride_w);
  const std::int64_t in_hi =
      std::max(in_lo, std::min(a.out_w, last_left < 0 ? 0 : last_left / a.stride_w + 1));
  // Under 32 channels a pixel taken alone fills part of a block, so when a row has edge pixels
  // its input rows are copied between columns of zx codes and the whole row runs.
  const bool pad_rows = runs && C < 32 && (in_lo > 0 || in_hi < a.out_w);
  const std::int64_t padded_w = std::max(a.w + a.pad_left, a.out_w + (a.kw - 1) * a.dilation_w) + 1;
  thread_local std::vector<std::uint8_t> padded;
  if (pad_rows) {
    padded.resize(static_cast<std::size_t>(a.kh * padded_w * C + 64));
    std::memset(padded.data(), a.zx_row[0], padded.size());
  }
  const std::uint8_t* row[kDepthwiseAvx512MaxTaps];  // input row of each tap's kh, or null
  const std::uint8_t* x_tap[kDepthwiseAvx512MaxTaps + 1];
  x_tap[taps] = a.zx_row;  // an odd last tap's partner (weight 0)
  // One pixel's sums, channel blocks of 32.
  auto pixel = [&](std::int64_t ow, std::int32_t* out) {
    for (std::int64_t kw = 0; kw < a.kw; ++kw) {
      const std::int64_t iw = ow * a.stride_w - a.pad_left + kw * a.dilation_w;
      const bool inside = iw >= 0 && iw < a.w;
      for (std::int64_t kh = 0; kh < a.kh; ++kh)
        x_tap[kh * a.kw + kw] = row[kh] && inside ? row[kh] + iw * C : a.zx_row;
    }
    for (std::int64_t ch = 0; ch < C; ch += 32)
      block32<Signed, Pairs>(x_tap, ch, pairs, a.pairs + (ch / 32) * pairs * 64, a.dw_init + ch,
                             C - ch, out + ch);
  };
  for (std::int64_t p = p0; p < p1;) {
    const std::int64_t oh = p / a.out_w, ow0 = p % a.out_w;
    const std::int64_t ow1 = std::min(a.out_w, ow0 + (p1 - p));
    for (std::int64_t kh = 0; kh < a.kh; ++kh) {
      const std::int64_t ih = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
      row[kh] = ih >= 0 && ih < a.h ? a.x + ih * a.w * C : nullptr;
      if (pad_rows && row[kh]) {
        // Columns [-pad_left, 0) and [w, ...) keep the zx codes written above.
        std::uint8_t* copy = padded.data() + kh * padded_w * C + a.pad_left * C;
        std::memcpy(copy, row[kh], static_cast<std::size_t>(a.w * C));
        row[kh] = copy;
      }
    }
    std::int32_t* out = acc + (p - p0) * C;
    const std::int64_t lo = pad_rows ? ow0 : runs ? std::clamp(in_lo, ow0, ow1) : ow1;
    const std::int64_t hi = pad_rows ? ow1 : runs ? std::clamp(in_hi, lo, ow1) : ow1;
    for (std::int64_t ow = ow0; ow < lo; ++ow) pixel(ow, out + (ow - ow0) * C);
    if (hi > lo) {
      // The run [lo, hi): tap t reads from its input pixel at lo on (a missing row: zx codes).
      for (std::int64_t kh = 0; kh < a.kh; ++kh)
        for (std::int64_t kw = 0; kw < a.kw; ++kw)
          x_tap[kh * a.kw + kw] =
              row[kh] ? row[kh] + (lo - a.pad_left + kw * a.dilation_w) * C : a.zx_row;
      const std::int64_t elements = (hi - lo) * C;
      std::int32_t* run_out = out + (lo - ow0) * C;
      std::int64_t b = 0;
      for (std::int64_t e = 0; e < elements; e += 32) {
        block32<Signed, Pairs>(x_tap, e, pairs, a.pairs + b * pairs * 64, a.dw_init + b * 32,
                               elements - e, run_out + e);
        if (++b == table_blocks) b = 0;
      }
    }
    for (std::int64_t ow = hi; ow < ow1; ++ow) pixel(ow, out + (ow - ow0) * C);
    p += ow1 - ow0;
  }
}

}  // namespace

void depthwise_rows_avx512(const DepthwiseArgs& a, std::int64_t p0, std::int64_t p1,
                           std::int32_t* acc) {
  const bool three = a.kh * a.kw == 9;
  if (a.x_signed) three ? rows<true, 5>(a, p0, p1, acc) : rows<true, 0>(a, p0, p1, acc);
  else three ? rows<false, 5>(a, p0, p1, acc) : rows<false, 0>(a, p0, p1, acc);
}

}  // namespace qforge::cpu_x86
