// AVX-512 VNNI tiles (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni): vpdpbusd
// multiplies 4 u8 of A by 4 s8 of B and adds the four products to an int32 lane, without
// saturation, so the raw dot product is exact modulo 2^32 (see gemm_kernels.h).
//
// One tile is `R` rows x `P` panels: R*P zmm accumulators, P panel loads and R 4-byte A
// broadcasts per k group. The GEMM driver uses up to 6x4 (24 accumulators, 4 B registers);
// the GEMV driver (M <= 16) uses up to 16 rows with rows * panels <= 16 so that every panel of
// the streamed weights is read once per call.
#include <immintrin.h>

#include <cstring>

#include "gemm_kernels.h"

namespace qforge::cpu_x86 {
namespace {

inline __m512i broadcast_a(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

template <int R, int P>
void tile(const TileArgs& t) {
  __m512i acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_si512();
  const std::uint8_t* a = t.a;
  const std::int8_t* b = t.b;
  for (std::int64_t g = 0; g < t.groups; ++g) {
    __m512i bv[P];
    for (int p = 0; p < P; ++p) bv[p] = _mm512_loadu_si512(b + p * t.panel_stride + g * 64);
    for (int r = 0; r < R; ++r) {
      const __m512i av = broadcast_a(a + r * t.lda + g * 4);
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], av, bv[p]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) _mm512_storeu_si512(t.d + r * t.ldd + p * 16, acc[r][p]);
}

using Fn = void (*)(const TileArgs&);
#define QF_ROW(R) {&tile<R, 1>, &tile<R, 2>, &tile<R, 3>, &tile<R, 4>}
// rows x panels; entries with more than 24 accumulators are never chosen by the drivers.
constexpr Fn kTable[6][4] = {QF_ROW(1), QF_ROW(2), QF_ROW(3), QF_ROW(4), QF_ROW(5), QF_ROW(6)};
#undef QF_ROW
constexpr Fn kGemvTable[16] = {&tile<1, 4>,  &tile<2, 4>,  &tile<3, 4>,  &tile<4, 4>,
                               &tile<5, 2>,  &tile<6, 2>,  &tile<7, 2>,  &tile<8, 2>,
                               &tile<9, 1>,  &tile<10, 1>, &tile<11, 1>, &tile<12, 1>,
                               &tile<13, 1>, &tile<14, 1>, &tile<15, 1>, &tile<16, 1>};

}  // namespace

void tile_avx512vnni(const TileArgs& t) { kTable[t.mr - 1][t.panels - 1](t); }

// The GEMV shapes: rows 1-4 take 4 panels, 5-8 take 2, 9-16 take 1 (at most 16 accumulators,
// so a weight panel is loaded once and used by every row). At the right edge of N a call can
// carry fewer panels than its row count allows; those use the one-panel tiles.
void tile_avx512vnni_gemv(const TileArgs& t) {
  if (t.panels == gemv_panels_for_rows(t.mr)) return kGemvTable[t.mr - 1](t);
  if (t.mr <= 6) return kTable[t.mr - 1][t.panels - 1](t);
  // rows 7-8 with one panel
  return t.mr == 7 ? tile<7, 1>(t) : tile<8, 1>(t);
}

}  // namespace qforge::cpu_x86
