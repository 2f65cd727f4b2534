// AVX2 tiles (compiled with -mavx2 -mfma), two ways to multiply bytes without VNNI:
//
// maddwd (always exact): A bytes (u8 domain) and B bytes (s8) are widened to int16 and
//   vpmaddwd adds pairs of int16 products into int32 lanes. |a*b| <= 255*128, so a pair sum is
//   far inside int32. The panel's 4 k of one column end up in two adjacent lanes, which a final
//   vphaddd folds.
//
// maddubs (the classic idiom, made exact): vpmaddubsw multiplies u8 by s8 and adds pairs into
//   int16 with SATURATION, so it is exact only while |a0*b0 + a1*b1| <= 32767. With A in the s8
//   domain we feed it |a| (<= 128, as u8) and sign(b, a) (b negated where a < 0), whose product
//   is a*b; a pair sum is then at most 2 * 128 * 127 = 32512 -- provided no B value is -128,
//   because sign() cannot negate -128. pack_weights records whether the packed B holds -128 and
//   the drivers choose this kernel only when it does not (symmetric int8 weights use the narrow
//   range [-127, 127], so they always qualify). u8 activations with full-range weights would
//   reach 2 * 255 * 127 = 64770 and saturate; that is why A is converted to s8 instead.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "gemm_kernels.h"

namespace qforge::cpu_x86 {
namespace {

inline std::int32_t load4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Each row's accumulators as named members, one level per row: GCC keeps a local
// __m256i acc[R][n] indexed by the row loop partly in memory (the array is not split into
// registers before that loop is unrolled) and stored some of it on every group; members
// reached through constant recursion stay in registers.
template <int R, int N>
struct Rows {
  __m256i c[N];
  Rows<R - 1, N> next;
};
template <int N>
struct Rows<0, N> {};

template <int R, int N>
[[gnu::always_inline]] inline void zero_rows(Rows<R, N>& acc) {
  if constexpr (R > 0) {
    for (int q = 0; q < N; ++q) acc.c[q] = _mm256_setzero_si256();
    zero_rows(acc.next);
  }
}

// Row r: |a| times sign(b, a), pairs added in int16 (at most 32512), then into int32.
template <int R>
[[gnu::always_inline]] inline void maddubs_rows(Rows<R, 2>& acc, const std::uint8_t* a,
                                                std::int64_t lda, __m256i b0, __m256i b1,
                                                __m256i ones) {
  if constexpr (R > 0) {
    const __m256i av = _mm256_set1_epi32(load4(a));
    const __m256i mag = _mm256_abs_epi8(av);
    const __m256i p0 = _mm256_maddubs_epi16(mag, _mm256_sign_epi8(b0, av));
    const __m256i p1 = _mm256_maddubs_epi16(mag, _mm256_sign_epi8(b1, av));
    acc.c[0] = _mm256_add_epi32(acc.c[0], _mm256_madd_epi16(p0, ones));
    acc.c[1] = _mm256_add_epi32(acc.c[1], _mm256_madd_epi16(p1, ones));
    maddubs_rows(acc.next, a + lda, lda, b0, b1, ones);
  }
}

template <int R>
[[gnu::always_inline]] inline void store_rows(const Rows<R, 2>& acc, std::int32_t* d,
                                              std::int64_t ldd) {
  if constexpr (R > 0) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), acc.c[0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 8), acc.c[1]);
    store_rows(acc.next, d + ldd, ldd);
  }
}

template <int R>
void tile_maddubs(const TileArgs& t) {
  const __m256i ones = _mm256_set1_epi16(1);
  Rows<R, 2> acc;
  zero_rows(acc);
  for (std::int64_t g = 0; g < t.groups; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.b + g * 64));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.b + g * 64 + 32));
    maddubs_rows(acc, t.a + g * 4, t.lda, b0, b1, ones);
  }
  store_rows(acc, t.d, t.ldd);
}

// Lanes of a quarter accumulator (4 columns): [c0 k01, c0 k23, c1 k01, c1 k23 | c2.., c3..].
inline __m256i fold(__m256i q0, __m256i q1) {
  // hadd -> [c0 c1 c4 c5 | c2 c3 c6 c7]; the permute restores column order.
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(q0, q1), 0xD8);
}

// Row r's [a0 a1 a2 a3] as int16, four times.
template <int R>
struct Widened {
  __m256i a;
  Widened<R - 1> next;
};
template <>
struct Widened<0> {};

template <int R>
[[gnu::always_inline]] inline void widen_rows(Widened<R>& w, const std::uint8_t* a,
                                              std::int64_t lda) {
  if constexpr (R > 0) {
    w.a = _mm256_cvtepu8_epi16(_mm_set1_epi32(load4(a)));
    widen_rows(w.next, a + lda, lda);
  }
}

template <int R>
[[gnu::always_inline]] inline void maddwd_rows(Rows<R, 4>& acc, const Widened<R>& w, int q,
                                               __m256i bw) {
  if constexpr (R > 0) {
    acc.c[q] = _mm256_add_epi32(acc.c[q], _mm256_madd_epi16(w.a, bw));
    maddwd_rows(acc.next, w.next, q, bw);
  }
}

template <int R>
[[gnu::always_inline]] inline void fold_rows(const Rows<R, 4>& acc, std::int32_t* d,
                                             std::int64_t ldd) {
  if constexpr (R > 0) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), fold(acc.c[0], acc.c[1]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 8), fold(acc.c[2], acc.c[3]));
    fold_rows(acc.next, d + ldd, ldd);
  }
}

template <int R>
void tile_maddwd(const TileArgs& t) {
  Rows<R, 4> acc;
  zero_rows(acc);
  for (std::int64_t g = 0; g < t.groups; ++g) {
    Widened<R> aw;
    widen_rows(aw, t.a + g * 4, t.lda);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const __m256i bw = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.b + g * 64 + q * 16)));
      maddwd_rows(acc, aw, q, bw);
    }
  }
  fold_rows(acc, t.d, t.ldd);
}

using Fn = void (*)(const TileArgs&);
constexpr Fn kMaddubs[4] = {&tile_maddubs<1>, &tile_maddubs<2>, &tile_maddubs<3>, &tile_maddubs<4>};
constexpr Fn kMaddwd[4] = {&tile_maddwd<1>, &tile_maddwd<2>, &tile_maddwd<3>, &tile_maddwd<4>};

// Up to call_rows rows: each panel's rows max_rows at a time (the panel stays in L1 for all).
template <int MaxRows>
void per_panel(const TileArgs& t, const Fn* table) {
  TileArgs one = t;
  for (int p = 0; p < t.panels; ++p) {
    one.b = t.b + p * t.panel_stride;
    for (int r = 0; r < t.mr; r += MaxRows) {
      one.a = t.a + r * t.lda;
      one.mr = std::min(MaxRows, t.mr - r);
      one.d = t.d + r * t.ldd + p * 16;
      table[one.mr - 1](one);
    }
  }
}

}  // namespace

void tile_avx2_maddubs(const TileArgs& t) { per_panel<kAvx2MaddubsShape.max_rows>(t, kMaddubs); }
void tile_avx2_maddwd(const TileArgs& t) { per_panel<kAvx2MaddwdShape.max_rows>(t, kMaddwd); }

}  // namespace qforge::cpu_x86
