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
    const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)), f);
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
