// The direct depthwise convolution kernel (AVX2 translation unit). NHWC keeps the channels of a
// pixel contiguous, so each tap multiplies 8 channels per instruction in int32 (|x - zx| and
// |w - zw| are at most 255, their products fit int32 and the reduction bound keeps the sums
// exact). Channels run in blocks of 32 held in four accumulators across every tap.
#include <immintrin.h>

#include "conv_kernels.h"

namespace qforge::cpu_x86 {
namespace {

inline __m256i load_centered(const std::uint8_t* p, bool is_signed, __m256i zx) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_sub_epi32(is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b), zx);
}

inline __m256i load8(const std::int32_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

inline void store8(std::int32_t* p, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}

}  // namespace

void depthwise_rows_avx2(const DepthwiseArgs& a, std::int64_t p0, std::int64_t p1,
                         std::int32_t* acc) {
  const __m256i zx = _mm256_set1_epi32(a.zx);
  const std::int64_t C = a.c;
  // The taps of one pixel inside the input: offsets into x and into the tap table.
  constexpr int kMaxTaps = 64;
  std::int64_t x_off[kMaxTaps], t_off[kMaxTaps];
  for (std::int64_t p = p0; p < p1; ++p) {
    const std::int64_t oh = p / a.out_w, ow = p % a.out_w;
    std::int32_t* out = acc + (p - p0) * C;
    // Gather the pixel's in-bounds taps, in batches of kMaxTaps (large kernels take several).
    bool first = true;
    std::int64_t tap = 0;
    const std::int64_t taps_total = a.kh * a.kw;
    while (tap < taps_total || first) {
      int n = 0;
      for (; tap < taps_total && n < kMaxTaps; ++tap) {
        const std::int64_t kh = tap / a.kw, kw = tap % a.kw;
        const std::int64_t ih = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
        const std::int64_t iw = ow * a.stride_w - a.pad_left + kw * a.dilation_w;
        if (ih < 0 || ih >= a.h || iw < 0 || iw >= a.w) continue;
        x_off[n] = (ih * a.w + iw) * C;
        t_off[n] = tap * C;
        ++n;
      }
      std::int64_t ch = 0;
      for (; ch + 32 <= C; ch += 32) {
        __m256i s0, s1, s2, s3;
        if (first) {
          s0 = s1 = s2 = s3 = _mm256_setzero_si256();
        } else {
          s0 = load8(out + ch), s1 = load8(out + ch + 8);
          s2 = load8(out + ch + 16), s3 = load8(out + ch + 24);
        }
        for (int i = 0; i < n; ++i) {
          const std::uint8_t* xp = a.x + x_off[i] + ch;
          const std::int32_t* tp = a.taps + t_off[i] + ch;
          s0 = _mm256_add_epi32(s0,
                                _mm256_mullo_epi32(load_centered(xp, a.x_signed, zx), load8(tp)));
          s1 = _mm256_add_epi32(
              s1, _mm256_mullo_epi32(load_centered(xp + 8, a.x_signed, zx), load8(tp + 8)));
          s2 = _mm256_add_epi32(
              s2, _mm256_mullo_epi32(load_centered(xp + 16, a.x_signed, zx), load8(tp + 16)));
          s3 = _mm256_add_epi32(
              s3, _mm256_mullo_epi32(load_centered(xp + 24, a.x_signed, zx), load8(tp + 24)));
        }
        store8(out + ch, s0);
        store8(out + ch + 8, s1);
        store8(out + ch + 16, s2);
        store8(out + ch + 24, s3);
      }
      for (; ch + 8 <= C; ch += 8) {
        __m256i s = first ? _mm256_setzero_si256() : load8(out + ch);
        for (int i = 0; i < n; ++i)
          s = _mm256_add_epi32(
              s, _mm256_mullo_epi32(load_centered(a.x + x_off[i] + ch, a.x_signed, zx),
                                    load8(a.taps + t_off[i] + ch)));
        store8(out + ch, s);
      }
      for (; ch < C; ++ch) {
        std::int32_t s = first ? 0 : out[ch];
        for (int i = 0; i < n; ++i) {
          const std::uint8_t b = a.x[x_off[i] + ch];
          const std::int32_t v =
              (a.x_signed ? static_cast<std::int32_t>(static_cast<std::int8_t>(b)) : b) - a.zx;
          s += v * a.taps[t_off[i] + ch];
        }
        out[ch] = s;
      }
      first = false;
    }
  }
}

}  // namespace qforge::cpu_x86
