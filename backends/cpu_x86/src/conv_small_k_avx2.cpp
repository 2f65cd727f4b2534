// The direct convolution kernel for short reductions (AVX2 translation unit): convolutions with
// few input channels (an image's first layer: C = 1 to 4, 3x3) or 1x1 ones with few channels.
// An im2col GEMM would spend more on packing A (a byte per tap, K padded to the GEMM's depth
// step) and on transposing NCHW than on the products; here each output pixel gathers its window
// once into int16 and multiplies it by all output channels held as int16 tap pairs.
#include <immintrin.h>

#include <cstring>

#include "conv_kernels.h"

namespace qforge::cpu_x86 {
namespace {

// Sums of one pixel for B blocks of 8 output channels starting at block ob: window pair j
// (two int16 taps read as one int32) broadcast and multiplied by each block's tap pairs.
template <int B>
inline void pixel_blocks(const std::int16_t* window, std::int64_t pairs, const std::int16_t* w,
                         std::int64_t o_padded, std::int64_t ob, std::int32_t* out) {
  __m256i s[B];
  for (int b = 0; b < B; ++b) s[b] = _mm256_setzero_si256();
  for (std::int64_t j = 0; j < pairs; ++j) {
    std::int32_t pair;
    std::memcpy(&pair, window + 2 * j, sizeof pair);
    const __m256i v = _mm256_set1_epi32(pair);
    const std::int16_t* wj = w + (j * o_padded + ob * 8) * 2;
    for (int b = 0; b < B; ++b)
      s[b] = _mm256_add_epi32(
          s[b],
          _mm256_madd_epi16(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wj + b * 16))));
  }
  for (int b = 0; b < B; ++b)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (ob + b) * 8), s[b]);
}

template <bool Signed>
inline std::int16_t centered(std::uint8_t b, std::int32_t zx) {
  const std::int32_t v = Signed ? static_cast<std::int8_t>(b) : b;
  return static_cast<std::int16_t>(v - zx);
}

template <bool Signed>
void rows(const SmallKArgs& a, std::int64_t p0, std::int64_t p1, std::int32_t* acc) {
  const std::int64_t pairs = (a.k + 1) / 2, blocks = a.o_padded / 8;
  const std::int64_t taps = a.kh * a.kw;
  const std::int64_t cs = a.nchw ? a.h * a.w : 1;  // distance between channels
  const std::int64_t ps = a.nchw ? 1 : a.c;        // distance between pixels of a row
  // Per tap its offsets from the window's corner (input rows, columns); per k (OIHW order) its
  // offset in X from the corner pixel, for windows inside the input.
  std::int64_t dh[kSmallKMax], dw[kSmallKMax], offset[kSmallKMax];
  for (std::int64_t t = 0; t < taps; ++t) {
    dh[t] = (t / a.kw) * a.dilation_h;
    dw[t] = (t % a.kw) * a.dilation_w;
    for (std::int64_t ci = 0; ci < a.c; ++ci)
      offset[ci * taps + t] = (dh[t] * a.w + dw[t]) * ps + ci * cs;
  }
  alignas(32) std::int16_t window[kSmallKMax + 2] = {};  // + 2: the odd k's zero partner
  for (std::int64_t p = p0; p < p1; ++p) {
    const std::int64_t oh = p / a.out_w, ow = p % a.out_w;
    const std::int64_t h0 = oh * a.stride_h - a.pad_top, w0 = ow * a.stride_w - a.pad_left;
    if (h0 >= 0 && w0 >= 0 && h0 + dh[taps - 1] < a.h && w0 + dw[taps - 1] < a.w) {
      const std::uint8_t* corner = a.x + (h0 * a.w + w0) * ps;
      for (std::int64_t k = 0; k < a.k; ++k) window[k] = centered<Signed>(corner[offset[k]], a.zx);
    } else {
      for (std::int64_t t = 0; t < taps; ++t) {
        const std::int64_t ih = h0 + dh[t], iw = w0 + dw[t];
        const bool in = ih >= 0 && ih < a.h && iw >= 0 && iw < a.w;
        const std::uint8_t* xp = a.x + (ih * a.w + iw) * ps;
        for (std::int64_t ci = 0; ci < a.c; ++ci)
          window[ci * taps + t] = in ? centered<Signed>(xp[ci * cs], a.zx) : std::int16_t{0};
      }
    }
    std::int32_t* out = acc + (p - p0) * a.o_padded;
    std::int64_t ob = 0;
    for (; ob + 4 <= blocks; ob += 4) pixel_blocks<4>(window, pairs, a.pairs, a.o_padded, ob, out);
    switch (blocks - ob) {
      case 3: pixel_blocks<3>(window, pairs, a.pairs, a.o_padded, ob, out); break;
      case 2: pixel_blocks<2>(window, pairs, a.pairs, a.o_padded, ob, out); break;
      case 1: pixel_blocks<1>(window, pairs, a.pairs, a.o_padded, ob, out); break;
      default: break;
    }
  }
}

}  // namespace

void small_k_rows_avx2(const SmallKArgs& a, std::int64_t p0, std::int64_t p1, std::int32_t* acc) {
  if (a.x_signed) rows<true>(a, p0, p1, acc);
  else rows<false>(a, p0, p1, acc);
}

}  // namespace qforge::cpu_x86
