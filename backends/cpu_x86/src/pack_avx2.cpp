// AVX2 activation packing (compiled with -mavx2). Sums use vpsadbw, which adds unsigned bytes
// in groups of eight into 64-bit lanes; signed sums are the unsigned sums of (b ^ 0x80) minus
// 128 per byte.
#include <immintrin.h>

#include "pack_kernels.h"

namespace qforge::cpu_x86 {
namespace {

// Converts [0, n) and returns the unsigned sum of the bytes as stored after `sum_flip`.
std::int64_t convert(const std::uint8_t* in, std::uint8_t* out, std::int64_t n, std::uint8_t flip,
                     std::uint8_t sum_flip) {
  const __m256i f = _mm256_set1_epi8(static_cast<char>(flip));
  const __m256i sf = _mm256_set1_epi8(static_cast<char>(sum_flip));
  __m256i acc = _mm256_setzero_si256();
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)), f);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), v);
    acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(v, sf), _mm256_setzero_si256()));
  }
  alignas(32) std::int64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc);
  std::int64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; ++i) {
    const auto v = static_cast<std::uint8_t>(in[i] ^ flip);
    out[i] = v;
    sum += static_cast<std::uint8_t>(v ^ sum_flip);
  }
  return sum;
}

}  // namespace

void pack_row_avx2(const std::uint8_t* in, std::uint8_t* out, std::int64_t len, std::uint8_t flip,
                   bool s8_domain, std::int64_t block, std::int64_t blocks, std::int32_t* rowsum) {
  const std::uint8_t sum_flip = s8_domain ? 0x80 : 0x00;
  for (std::int64_t j = 0; j < blocks; ++j) {
    const std::int64_t k0 = j * block;
    const std::int64_t n = k0 >= len ? 0 : (len - k0 < block ? len - k0 : block);
    const std::int64_t u = n > 0 ? convert(in + k0, out + k0, n, flip, sum_flip) : 0;
    rowsum[j] = static_cast<std::int32_t>(s8_domain ? u - 128 * n : u);
  }
}

namespace {

// One packed group: columns 4q..4q+3 (4 bytes each) in c[q]. Stores it, adds the column sums
// (maddubs with ones: pairs of signed bytes, then madd: the group's 4 k per column, exact) and
// notes a stored -128.
inline void put_group(std::int8_t* out, const __m128i (&c)[4], __m128i (&sums)[4], __m128i& mins) {
  const __m128i ones8 = _mm_set1_epi8(1), ones16 = _mm_set1_epi16(1), min8 = _mm_set1_epi8(-128);
  for (int q = 0; q < 4; ++q) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * q), c[q]);
    sums[q] = _mm_add_epi32(sums[q], _mm_madd_epi16(_mm_maddubs_epi16(ones8, c[q]), ones16));
    mins = _mm_or_si128(mins, _mm_cmpeq_epi8(c[q], min8));
  }
}

}  // namespace

std::int64_t pack_panel_bytes_avx2(const std::uint8_t* b, std::int64_t ld, bool nk, std::int64_t k,
                                   std::uint8_t flip, std::int8_t* panel, std::int32_t* colsum,
                                   bool* holds_min) {
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  __m128i sums[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(),
                     _mm_setzero_si128()};
  __m128i mins = _mm_setzero_si128();
  std::int64_t kk = 0;
  if (nk) {
    // 16 bytes (4 groups) of each of the 16 rows; a 4x4 transpose of 32-bit words per quad of
    // rows gives, for group g, columns 4q..4q+3.
    for (; kk + 16 <= k; kk += 16) {
      __m128i t[4][4];  // [quad][group]
      for (int q = 0; q < 4; ++q) {
        __m128 r[4];
        for (int i = 0; i < 4; ++i)
          r[i] = _mm_castsi128_ps(_mm_xor_si128(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + (4 * q + i) * ld + kk)), f));
        _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]);
        for (int g = 0; g < 4; ++g) t[q][g] = _mm_castps_si128(r[g]);
      }
      for (int g = 0; g < 4; ++g) {
        const __m128i c[4] = {t[0][g], t[1][g], t[2][g], t[3][g]};
        put_group(panel + (kk / 4 + g) * 64, c, sums, mins);
      }
    }
  } else {
    // 4 rows of 16 columns: interleave bytes, then 16-bit pairs, into 4 bytes per column.
    for (; kk + 4 <= k; kk += 4) {
      __m128i r[4];
      for (int i = 0; i < 4; ++i)
        r[i] =
            _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + (kk + i) * ld)), f);
      const __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]), hi01 = _mm_unpackhi_epi8(r[0], r[1]);
      const __m128i lo23 = _mm_unpacklo_epi8(r[2], r[3]), hi23 = _mm_unpackhi_epi8(r[2], r[3]);
      const __m128i c[4] = {_mm_unpacklo_epi16(lo01, lo23), _mm_unpackhi_epi16(lo01, lo23),
                            _mm_unpacklo_epi16(hi01, hi23), _mm_unpackhi_epi16(hi01, hi23)};
      put_group(panel + (kk / 4) * 64, c, sums, mins);
    }
  }
  for (int q = 0; q < 4; ++q) {
    alignas(16) std::int32_t s4[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(s4), sums[q]);
    for (int i = 0; i < 4; ++i) colsum[4 * q + i] += s4[i];
  }
  if (_mm_movemask_epi8(mins)) *holds_min = true;
  return kk;
}

void unpack_nibbles_avx2(const std::uint8_t* in, std::uint8_t* out, std::int64_t groups) {
  const __m256i mask = _mm256_set1_epi8(0x0F);
  for (std::int64_t g = 0; g < groups; ++g) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + g * 32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + g * 64), _mm256_and_si256(x, mask));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + g * 64 + 32),
                        _mm256_and_si256(_mm256_srli_epi16(x, 4), mask));
  }
}

}  // namespace qforge::cpu_x86
