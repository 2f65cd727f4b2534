// AVX-512 VNNI tiles (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni): vpdpbusd
// multiplies 4 u8 of A by 4 s8 of B and adds the four products to an int32 lane, without
// saturation, so the raw dot product is exact modulo 2^32 (see gemm_kernels.h).
//
// One tile is `R` rows x `P` panels: R*P zmm accumulators, P panel loads and R 4-byte A
// broadcasts per k group. The GEMM driver uses up to 6x4 (24 accumulators, 4 B registers);
// the GEMV driver (M <= 16) uses up to 16 rows with rows * panels <= 16 so that every panel of
// the streamed weights is read once per call.
// GCC 12's AVX-512 conversion intrinsics pass _mm512_undefined_*() as the masked-off source and
// then warn that it "may be used uninitialized" (the mask is all ones): a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
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
    if (t.b_prefetch)  // one cache line per panel and group
      for (int p = 0; p < P; ++p)
        _mm_prefetch(reinterpret_cast<const char*>(b + p * t.panel_stride + g * 64 + t.b_prefetch),
                     _MM_HINT_T0);
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

// The GEMM micro-tile's accumulators as named members, one level per row: GCC keeps a local
// __m512i acc[R][P] indexed by the row loop in memory and stores most of it on every k group
// (perf annotate of tile<6, 4>: about 20 zmm stores and 20 moves per 24 vpdpbusd); members
// reached through constant recursion stay in registers (the AVX2 tiles do the same).
template <int R, int P>
struct Acc {
  __m512i c[P];
  Acc<R - 1, P> next;
};
template <int P>
struct Acc<0, P> {};

template <bool LOAD, int R, int P>
[[gnu::always_inline]] inline void init_rows(Acc<R, P>& acc, const std::int32_t* d,
                                             std::int64_t ldd) {
  if constexpr (R > 0) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p)
      acc.c[p] = LOAD ? _mm512_loadu_si512(d + p * 16) : _mm512_setzero_si512();
    init_rows<LOAD>(acc.next, d + ldd, ldd);
  }
}

template <int R, int P>
[[gnu::always_inline]] inline void dot_rows(Acc<R, P>& acc, const std::uint8_t* a, std::int64_t lda,
                                            const __m512i (&bv)[P]) {
  if constexpr (R > 0) {
    const __m512i av = broadcast_a(a);
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc.c[p] = _mm512_dpbusd_epi32(acc.c[p], av, bv[p]);
    dot_rows(acc.next, a + lda, lda, bv);
  }
}

template <int R, int P>
[[gnu::always_inline]] inline void store_rows(const Acc<R, P>& acc, std::int32_t* d,
                                              std::int64_t ldd) {
  if constexpr (R > 0) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) _mm512_storeu_si512(d + p * 16, acc.c[p]);
    store_rows(acc.next, d + ldd, ldd);
  }
}

// The GEMM micro-tile: R rows x P panels over t.groups groups, without prefetch; when ACC it
// adds to the int32 sums already in d (a later K block of the same output rows).
template <int R, int P, bool ACC>
void gemm_tile(const TileArgs& t) {
  Acc<R, P> acc;
  init_rows<ACC>(acc, t.d, t.ldd);
  const std::uint8_t* a = t.a;
  const std::int8_t* b = t.b;
  const std::int64_t ps = t.panel_stride;
  for (std::int64_t g = 0; g < t.groups; ++g) {
    __m512i bv[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) bv[p] = _mm512_loadu_si512(b + p * ps);
    dot_rows(acc, a, t.lda, bv);
    a += kGroup;
    b += kGroup * kPanel;
  }
  store_rows(acc, t.d, t.ldd);
}

using Fn = void (*)(const TileArgs&);
#define QF_GROW(R, ACC) \
  { &gemm_tile<R, 1, ACC>, &gemm_tile<R, 2, ACC>, &gemm_tile<R, 3, ACC>, &gemm_tile<R, 4, ACC> }
// [first K block, later K block] x rows 1-6 x panels 1-4
constexpr Fn kGemmTable[2][6][4] = {{QF_GROW(1, false), QF_GROW(2, false), QF_GROW(3, false),
                                     QF_GROW(4, false), QF_GROW(5, false), QF_GROW(6, false)},
                                    {QF_GROW(1, true), QF_GROW(2, true), QF_GROW(3, true),
                                     QF_GROW(4, true), QF_GROW(5, true), QF_GROW(6, true)}};
#undef QF_GROW

// K groups per block of the GEMM tile: the block of B it reads (4 panels x 64 groups x 64 bytes
// = 16 KiB), the rows' A bytes (32 x 256) and the int32 sums (32 x 64 x 4) fit in L1 together,
// so each B line comes from L2 once per call instead of once per 6-row sub-tile.
constexpr std::int64_t kKBlockGroups = 64;

#define QF_ROW(R) \
  { &tile<R, 1>, &tile<R, 2>, &tile<R, 3>, &tile<R, 4> }
// rows x panels; entries with more than 24 accumulators are never chosen by the drivers.
constexpr Fn kTable[6][4] = {QF_ROW(1), QF_ROW(2), QF_ROW(3), QF_ROW(4), QF_ROW(5), QF_ROW(6)};
#undef QF_ROW
constexpr Fn kGemvTable[16] = {&tile<1, 4>,  &tile<2, 4>,  &tile<3, 4>,  &tile<4, 4>,
                               &tile<5, 2>,  &tile<6, 2>,  &tile<7, 2>,  &tile<8, 2>,
                               &tile<9, 1>,  &tile<10, 1>, &tile<11, 1>, &tile<12, 1>,
                               &tile<13, 1>, &tile<14, 1>, &tile<15, 1>, &tile<16, 1>};

// One group of a panel: 64 bytes, or 32 bytes of nibbles widened in registers.
template <bool NIB>
inline __m512i load_group(const std::int8_t* panel, std::int64_t g) {
  if constexpr (NIB) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + g * 32));
    const __m256i mask = _mm256_set1_epi8(0x0F);
    return _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_and_si256(x, mask)),
                              _mm256_and_si256(_mm256_srli_epi16(x, 4), mask), 1);
  } else {
    return _mm512_loadu_si512(panel + g * 64);
  }
}

template <int R, int P, bool NIB>
void block_tile(const BlockTileArgs& t) {
  __m512 facc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) facc[r][p] = _mm512_setzero_ps();
  const std::int64_t groups_total = (t.k + 3) / 4;
  const std::int64_t bg = t.block_size / 4;
  for (std::int64_t j = 0; j < t.blocks; ++j) {
    __m512i acc[R][P];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_si512();
    const std::int64_t g0 = j * bg;
    const std::int64_t g1 = g0 + bg < groups_total ? g0 + bg : groups_total;
    for (std::int64_t g = g0; g < g1; ++g) {
      __m512i bv[P];
      for (int p = 0; p < P; ++p) bv[p] = load_group<NIB>(t.b + p * t.panel_stride, g);
      for (int r = 0; r < R; ++r) {
        const __m512i av = broadcast_a(t.a + r * t.lda + g * 4);
        for (int p = 0; p < P; ++p) acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], av, bv[p]);
      }
    }
    const std::int64_t k0 = j * t.block_size;
    const auto len = static_cast<std::int32_t>(t.k - k0 < t.block_size ? t.k - k0 : t.block_size);
    for (int p = 0; p < P; ++p) {
      const std::int64_t c = p * t.panel_meta_stride + j * 16;
      const __m512i cs = _mm512_loadu_si512(t.colsum + c);
      const __m512i zb = _mm512_loadu_si512(t.zb + c);
      const __m512 sb = _mm512_loadu_ps(t.sb + c);
      for (int r = 0; r < R; ++r) {
        const std::int32_t za = t.za[r];
        const __m512i za_v = _mm512_set1_epi32(za);
        // len * za - rowsum, wrapping like the rest
        const auto w = static_cast<std::int32_t>(
            static_cast<std::uint32_t>(len) * static_cast<std::uint32_t>(za) -
            static_cast<std::uint32_t>(t.rowsum[r * t.blocks + j]));
        __m512i cj = _mm512_sub_epi32(acc[r][p], _mm512_mullo_epi32(za_v, cs));
        cj = _mm512_add_epi32(cj, _mm512_mullo_epi32(zb, _mm512_set1_epi32(w)));
        const __m512 v =
            _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(cj), _mm512_set1_ps(t.sa[r])), sb);
        facc[r][p] = _mm512_add_ps(facc[r][p], v);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) _mm512_storeu_ps(t.out + r * t.ldo + p * 16, facc[r][p]);
}

using BlockFn = void (*)(const BlockTileArgs&);
#define QF_BROW(R, N) \
  { &block_tile<R, 1, N>, &block_tile<R, 2, N>, &block_tile<R, 4, N> }
// [bytes, nibbles] x rows 1-6 x panels {1, 2, 4}; the driver keeps rows * panels <= 12.
constexpr BlockFn kBlockTable[2][6][3] = {{QF_BROW(1, false), QF_BROW(2, false), QF_BROW(3, false),
                                           QF_BROW(4, false), QF_BROW(5, false), QF_BROW(6, false)},
                                          {QF_BROW(1, true), QF_BROW(2, true), QF_BROW(3, true),
                                           QF_BROW(4, true), QF_BROW(5, true), QF_BROW(6, true)}};
#undef QF_BROW

}  // namespace

void block_tile_avx512vnni(const BlockTileArgs& t) {
  kBlockTable[t.nibbles ? 1 : 0][t.mr - 1][t.panels == 4 ? 2 : t.panels - 1](t);
}

// Up to call_rows rows: per K block, sub-tiles of at most 6 rows (the rows spread evenly: 32 rows
// are 6+6+5+5+5+5, not 6x5+2) over the same panels.
void tile_avx512vnni(const TileArgs& t) {
  const int subtiles = (t.mr + kAvx512VnniShape.max_rows - 1) / kAvx512VnniShape.max_rows;
  const std::int64_t kblocks = (t.groups + kKBlockGroups - 1) / kKBlockGroups;
  const std::int64_t block =
      std::max<std::int64_t>(1, (t.groups + kblocks - 1) / std::max<std::int64_t>(1, kblocks));
  TileArgs s = t;
  std::int64_t g0 = 0;
  do {  // at least once: K = 0 still stores zero sums
    s.groups = std::min(block, t.groups - g0);
    const int later = g0 > 0 ? 1 : 0;
    int r0 = 0;
    for (int i = 0; i < subtiles; ++i) {
      const int rows = (t.mr - r0 + (subtiles - i) - 1) / (subtiles - i);
      s.a = t.a + r0 * t.lda + g0 * kGroup;
      s.b = t.b + g0 * kGroup * kPanel;
      s.d = t.d + r0 * t.ldd;
      s.mr = rows;
      kGemmTable[later][rows - 1][t.panels - 1](s);
      r0 += rows;
    }
    g0 += block;
  } while (g0 < t.groups);
}

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
