// AVX-VNNI tiles (compiled with -mavx2 -mavxvnni): the VEX-encoded vpdpbusd on ymm, for CPUs
// with AVX-VNNI but without AVX-512 (Alder Lake and later client cores). A panel of 16
// columns is two ymm; the tile is up to 6 rows x 1 panel (12 accumulators of 16 registers).
#include <immintrin.h>

#include <cstring>

#include "gemm_kernels.h"

namespace qforge::cpu_x86 {
namespace {

inline __m256i broadcast_a(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

template <int R>
void tile(const TileArgs& t) {
  __m256i acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (std::int64_t g = 0; g < t.groups; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.b + g * 64));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.b + g * 64 + 32));
    for (int r = 0; r < R; ++r) {
      const __m256i av = broadcast_a(t.a + r * t.lda + g * 4);
      acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], av, b0);
      acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], av, b1);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(t.d + r * t.ldd), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(t.d + r * t.ldd + 8), acc[r][1]);
  }
}

using Fn = void (*)(const TileArgs&);
constexpr Fn kTable[6] = {&tile<1>, &tile<2>, &tile<3>, &tile<4>, &tile<5>, &tile<6>};

}  // namespace

void tile_avxvnni(const TileArgs& t) {
  TileArgs one = t;
  for (int p = 0; p < t.panels; ++p) {
    one.b = t.b + p * t.panel_stride;
    one.d = t.d + p * 16;
    kTable[t.mr - 1](one);
  }
}

}  // namespace qforge::cpu_x86
