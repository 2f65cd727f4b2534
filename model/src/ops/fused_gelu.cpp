// erf over spans and the fused GELU (ops/fused.h). GCC does not vectorise fast_erf's loop
// (its per-lane choice of coefficients compiles to branches: measured at a tenth of a MiniLM
// batch), so the vector paths spell it with intrinsics: both intervals' coefficients blended per
// lane, and Horner's steps as FMA instructions like the scalar code's std::fma, which keeps every
// lane equal to fast_erf bit for bit. The vector paths need AVX2 with FMA or AVX-512F; other CPUs
// take the scalar loop (std::fma a libm call there). With AVX-512 four vectors go through each
// step together: one erf is a chain of 10 dependent FMAs after the reduction, so a single chain
// leaves the units idle most of the time. A tail goes through the same vector code on masked or
// padded lanes, so an element's result does not depend on where a task's range ends.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/fast_erf.h"
#include "ops/fused.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define QFORGE_ERF_AVX2 1
#endif

namespace qforge::model::ops {
namespace {

inline float gelu_scalar(const GeluErf& g, float v) {
  return (v * g.half) * (fast_erf(v / g.divisor) + g.one);
}

#ifdef QFORGE_ERF_AVX2
// Everything down to pop_options is compiled for AVX2 with FMA (lambdas included) and called
// only when the CPU has both. No contraction: only the Horner steps are fused, as in fast_erf.
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("fp-contract=off")

inline __m256 erf8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 a = _mm256_andnot_ps(sign, x);
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 ps = _mm256_set1_ps(kErfSmall[0]);
  for (int i = 1; i < 6; ++i) ps = _mm256_fmadd_ps(ps, x2, _mm256_set1_ps(kErfSmall[i]));
  const __m256 small = _mm256_mul_ps(x, ps);
  const __m256 middle = _mm256_cmp_ps(a, _mm256_set1_ps(2.0f), _CMP_LT_OQ);
  const __m256 tm =
      _mm256_mul_ps(_mm256_sub_ps(a, _mm256_set1_ps(1.45f)), _mm256_set1_ps(1.0f / 0.55f));
  const __m256 tl =
      _mm256_mul_ps(_mm256_sub_ps(a, _mm256_set1_ps(2.96f)), _mm256_set1_ps(1.0f / 0.96f));
  const __m256 t = _mm256_blendv_ps(tl, tm, middle);
  __m256 p = _mm256_blendv_ps(_mm256_set1_ps(kErfLarge[0]), _mm256_set1_ps(kErfMiddle[0]), middle);
  for (int i = 1; i < 11; ++i)
    p = _mm256_fmadd_ps(
        p, t,
        _mm256_blendv_ps(_mm256_set1_ps(kErfLarge[i]), _mm256_set1_ps(kErfMiddle[i]), middle));
  // copysign(a < 3.92 ? p : 1, x)
  const __m256 inside = _mm256_cmp_ps(a, _mm256_set1_ps(3.92f), _CMP_LT_OQ);
  const __m256 mag = _mm256_andnot_ps(sign, _mm256_blendv_ps(_mm256_set1_ps(1.0f), p, inside));
  const __m256 far = _mm256_or_ps(mag, _mm256_and_ps(sign, x));
  // !(a >= 0.9) takes `small`: NaN fails the comparison and stays NaN there.
  const __m256 big = _mm256_cmp_ps(a, _mm256_set1_ps(0.9f), _CMP_GE_OQ);
  return _mm256_blendv_ps(small, far, big);
}

// Calls f(in, out) on each whole block of eight values, then on the zero-padded tail. (f reads
// and writes through pointers: no vector crosses a call, whose ABI GCC warns about.)
template <class F>
inline void by_eight(const float* x, float* y, std::int64_t n, F f) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) f(x + i, y + i);
  if (i < n) {
    alignas(32) float in[8] = {}, out[8];
    std::memcpy(in, x + i, static_cast<std::size_t>(n - i) * sizeof(float));
    f(in, out);
    std::memcpy(y + i, out, static_cast<std::size_t>(n - i) * sizeof(float));
  }
}

void erf_avx2(const float* x, float* y, std::int64_t n) {
  by_eight(x, y, n,
           [](const float* in, float* out) { _mm256_storeu_ps(out, erf8(_mm256_loadu_ps(in))); });
}

// (v * half) * (erf(v / divisor) + one) of eight v.
inline __m256 gelu8(const GeluErf& g, __m256 v) {
  const __m256 e =
      _mm256_add_ps(erf8(_mm256_div_ps(v, _mm256_set1_ps(g.divisor))), _mm256_set1_ps(g.one));
  return _mm256_mul_ps(_mm256_mul_ps(v, _mm256_set1_ps(g.half)), e);
}

void gelu_avx2(const GeluErf& g, const float* x, float* y, std::int64_t n) {
  auto plain = [&g](const float* in, float* out) {
    _mm256_storeu_ps(out, gelu8(g, _mm256_loadu_ps(in)));
  };
  if (!g.bias) {
    by_eight(x, y, n, plain);
    return;
  }
  // Row by row of the bias's length, so the bias is read as a contiguous vector; a row's tail
  // shorter than eight goes through by_eight's padded path.
  for (std::int64_t r = 0; r < n; r += g.bias_n) {
    const std::int64_t len = std::min(g.bias_n, n - r);
    std::int64_t j = 0;
    for (; j + 8 <= len; j += 8)
      _mm256_storeu_ps(y + r + j, gelu8(g, _mm256_add_ps(_mm256_loadu_ps(x + r + j),
                                                         _mm256_loadu_ps(g.bias + j))));
    if (j < len) {
      float sum[8];
      for (std::int64_t l = 0; l < len - j; ++l) sum[l] = x[r + j + l] + g.bias[j + l];
      by_eight(sum, y + r + j, len - j, plain);
    }
  }
}

#pragma GCC pop_options

// The same arithmetic on sixteen lanes, N vectors per step (Horner's steps interleaved).
#pragma GCC push_options
#pragma GCC target("avx512f")
// AVX-512F brings FMA, and GCC contracts a * b + c in C++ whatever the -std: only the Horner
// steps are fused (as fast_erf's std::fma), every other multiply and add stays apart.
#pragma GCC optimize("fp-contract=off")

// Forced inline with every loop unrolled: the vectors must stay in registers (a call or a
// rolled loop keeps them in stack arrays, and the chains then wait on memory).
#define QFORGE_ERF_INLINE __attribute__((always_inline)) inline
#define QFORGE_ERF_LAMBDA __attribute__((always_inline))

template <int N>
QFORGE_ERF_INLINE void erf16(__m512 (&x)[N]) {
  // Sign-bit masks through GCC's vector operators (the _si512 intrinsics' undefined pass-through
  // operand draws -Wmaybe-uninitialized from GCC 12's headers).
  typedef std::int32_t Bits __attribute__((vector_size(64)));
  const Bits sign = (Bits)_mm512_set1_ps(-0.0f);
  __m512 a[N], x2[N], ps[N], t[N], p[N];
  __mmask16 middle[N];
#pragma GCC unroll 16
  for (int k = 0; k < N; ++k) {
    a[k] = (__m512)(~sign & (Bits)x[k]);
    x2[k] = _mm512_mul_ps(x[k], x[k]);
    ps[k] = _mm512_set1_ps(kErfSmall[0]);
    middle[k] = _mm512_cmp_ps_mask(a[k], _mm512_set1_ps(2.0f), _CMP_LT_OQ);
    const __m512 tm =
        _mm512_mul_ps(_mm512_sub_ps(a[k], _mm512_set1_ps(1.45f)), _mm512_set1_ps(1.0f / 0.55f));
    const __m512 tl =
        _mm512_mul_ps(_mm512_sub_ps(a[k], _mm512_set1_ps(2.96f)), _mm512_set1_ps(1.0f / 0.96f));
    t[k] = _mm512_mask_blend_ps(middle[k], tl, tm);
    p[k] = _mm512_mask_blend_ps(middle[k], _mm512_set1_ps(kErfLarge[0]),
                                _mm512_set1_ps(kErfMiddle[0]));
  }
#pragma GCC unroll 16
  for (int i = 1; i < 6; ++i)
#pragma GCC unroll 16
    for (int k = 0; k < N; ++k) ps[k] = _mm512_fmadd_ps(ps[k], x2[k], _mm512_set1_ps(kErfSmall[i]));
#pragma GCC unroll 16
  for (int i = 1; i < 11; ++i)
#pragma GCC unroll 16
    for (int k = 0; k < N; ++k)
      p[k] = _mm512_fmadd_ps(p[k], t[k],
                             _mm512_mask_blend_ps(middle[k], _mm512_set1_ps(kErfLarge[i]),
                                                  _mm512_set1_ps(kErfMiddle[i])));
#pragma GCC unroll 16
  for (int k = 0; k < N; ++k) {
    const __m512 small = _mm512_mul_ps(x[k], ps[k]);
    // copysign(a < 3.92 ? p : 1, x)
    const __mmask16 inside = _mm512_cmp_ps_mask(a[k], _mm512_set1_ps(3.92f), _CMP_LT_OQ);
    const Bits mag = ~sign & (Bits)_mm512_mask_blend_ps(inside, _mm512_set1_ps(1.0f), p[k]);
    const __m512 far = (__m512)(mag | (sign & (Bits)x[k]));
    // !(a >= 0.9) takes `small`: NaN fails the comparison and stays NaN there.
    const __mmask16 big = _mm512_cmp_ps_mask(a[k], _mm512_set1_ps(0.9f), _CMP_GE_OQ);
    x[k] = _mm512_mask_blend_ps(big, small, far);
  }
}

// (v * half) * (erf(v / divisor) + one) of N vectors, in place.
template <int N>
QFORGE_ERF_INLINE void gelu16(const GeluErf& g, __m512 (&v)[N]) {
  __m512 e[N];
#pragma GCC unroll 16
  for (int k = 0; k < N; ++k) e[k] = _mm512_div_ps(v[k], _mm512_set1_ps(g.divisor));
  erf16(e);
#pragma GCC unroll 16
  for (int k = 0; k < N; ++k)
    v[k] = _mm512_mul_ps(_mm512_mul_ps(v[k], _mm512_set1_ps(g.half)),
                         _mm512_add_ps(e[k], _mm512_set1_ps(g.one)));
}

constexpr std::int64_t kWide = 4;  // vectors per step

// Loads x in blocks of kWide vectors, then single vectors (the last one masked, its lanes past n
// zero), calls op(v, i) on each block in place (v an array of one or kWide vectors, i its first
// index), and stores the block's lanes below n to y.
template <class Op>
QFORGE_ERF_INLINE void by_sixteen(const float* x, float* y, std::int64_t n, Op op) {
  std::int64_t i = 0;
  for (; i + 16 * kWide <= n; i += 16 * kWide) {
    __m512 v[kWide];
#pragma GCC unroll 16
    for (int k = 0; k < kWide; ++k) v[k] = _mm512_loadu_ps(x + i + 16 * k);
    op(v, i);
#pragma GCC unroll 16
    for (int k = 0; k < kWide; ++k) _mm512_storeu_ps(y + i + 16 * k, v[k]);
  }
  for (; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 v[1] = {_mm512_maskz_loadu_ps(m, x + i)};
    op(v, i);
    _mm512_mask_storeu_ps(y + i, m, v[0]);
  }
}

void erf_avx512(const float* x, float* y, std::int64_t n) {
  by_sixteen(x, y, n, [](auto& v, std::int64_t) QFORGE_ERF_LAMBDA { erf16(v); });
}

void gelu_avx512(const GeluErf& g, const float* x, float* y, std::int64_t n) {
  if (!g.bias) {
    by_sixteen(x, y, n, [&g](auto& v, std::int64_t) QFORGE_ERF_LAMBDA { gelu16(g, v); });
    return;
  }
  // Row by row of the bias's length, so the bias is read as contiguous vectors (a row's masked
  // tail reads zeros past the bias's end, in lanes that are not stored).
  for (std::int64_t r = 0; r < n; r += g.bias_n) {
    const std::int64_t len = std::min(g.bias_n, n - r);
    by_sixteen(x + r, y + r, len, [&g](auto& v, std::int64_t j) QFORGE_ERF_LAMBDA {
      constexpr int N = sizeof(v) / sizeof(v[0]);
      const std::int64_t left = g.bias_n - j;
#pragma GCC unroll 16
      for (int k = 0; k < N; ++k) {
        const std::int64_t lanes = left - 16 * k;
        const __mmask16 m = lanes >= 16
                                ? __mmask16(0xffff)
                                : static_cast<__mmask16>(lanes <= 0 ? 0u : (1u << lanes) - 1);
        v[k] = _mm512_add_ps(v[k], _mm512_maskz_loadu_ps(m, g.bias + j + 16 * k));
      }
      gelu16(g, v);
    });
  }
}

#pragma GCC pop_options

bool has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

bool has_avx2_fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

#endif

}  // namespace

void erf_values(const float* x, float* y, std::int64_t n) {
#ifdef QFORGE_ERF_AVX2
  if (has_avx512()) return erf_avx512(x, y, n);
  if (has_avx2_fma()) return erf_avx2(x, y, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) y[i] = fast_erf(x[i]);
}

void gelu_erf(const GeluErf& g, const float* x, float* y, std::int64_t n) {
#ifdef QFORGE_ERF_AVX2
  if (has_avx512()) return gelu_avx512(g, x, y, n);
  if (has_avx2_fma()) return gelu_avx2(g, x, y, n);
#endif
  if (!g.bias) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = gelu_scalar(g, x[i]);
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) y[i] = gelu_scalar(g, x[i] + g.bias[i % g.bias_n]);
}

}  // namespace qforge::model::ops
