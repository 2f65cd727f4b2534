// Device versions of the reference's scalar numerics (core/src/reference), written to give the
// same bits: a true IEEE float32 division (__fdiv_rn, never the fast reciprocal), round half to
// even (rintf in the default rounding mode), explicit _rn intrinsics so that nvcc cannot fuse a
// multiply and an add into one FMA where the reference rounds twice.
#pragma once

#include <cstdint>

namespace qforge::cuda::dev {

// reference::quantize_value for every dtype but binary. rintf(v) + z may round only when
// |rintf(v)| >= 2^24, and then it lies far outside any [qmin, qmax], as the reference's double
// sum does: both saturate to the same end.
__device__ __forceinline__ std::int32_t quantize_value(float x, float scale,
                                                       std::int32_t zero_point, std::int32_t qmin,
                                                       std::int32_t qmax) {
  const float v = __fdiv_rn(x, scale);
  if (isnan(v)) return zero_point;
  const float r = __fadd_rn(rintf(v), static_cast<float>(zero_point));
  if (r <= static_cast<float>(qmin)) return qmin;
  if (r >= static_cast<float>(qmax)) return qmax;
  return static_cast<std::int32_t>(r);
}

// ---- quantize_value without a division per element ----
//
// The division costs a MUFU.RCP, Newton steps and a slow-path check per element, and rintf and
// the float-to-int conversion two more quarter-rate instructions; together they, not memory,
// bounded the quantize kernels (docs/PERFORMANCE.md). The fast path multiplies by r = 1/s
// (correctly rounded, __frcp_rn, once per scale) and rounds with the 1.5 * 2^23 trick, all on
// the full-rate FP32/INT pipes, and proves per element that it got the reference's answer:
//
//   q = x / s (exact real), v = fl(q) (the reference's quotient), r = (1/s)(1 + d1),
//   p = fl(x * r) = q (1 + d1)(1 + d2), with |d1|, |d2|, and v's |d0|, <= u = 2^-24 while r is
//   a normal float and x * r neither overflows nor underflows. Then
//     |p - v| <= |q| (3u + u^2)  and  |q| <= |p| / (1 - u)^2,  so  |p - v| < 3.0000003 u |p|
//   which is below |p| 2^-22. rint(p) != rint(v) needs a half-integer h between p and v
//   (rint is monotonic and steps only at half-integers), so |p - h| <= |p - v| < |p| 2^-22.
//   Hence: when the distance from p to the nearest half-integer is at least |p| 2^-22,
//   rint(p) == rint(v), and sat(rint(p) + z) is the reference's code. When p or v is subnormal
//   (underflow), |p| and |v| are far below 1/2 and both round to 0, which the same test accepts.
//   When s is a power of two, r = 1/s exactly, p and v are the same real rounded the same way,
//   and the window is 0.
// The test is exact arithmetic: for |p| < 2^21, y = p + 1.5 * 2^23 lies in [2^23, 2^24), where
// floats are the integers, so y rounds p to an integer with ties to even (1.5 * 2^23 is even),
// y - 1.5 * 2^23 = rint(p) exactly, t = p - rint(p) exactly (|t| <= 1/2 and a multiple of
// p's ulp), 0.5 - |t| exactly wherever it can be small (|t| >= 1/4: Sterbenz), and
// |p| * 2^-22 is a power-of-two scaling. The integer rint(p) is read from y's bits.
// Everything else takes the exact path: NaN or infinite x (p is not below 2^21), |p| >= 2^21
// (far outside every code range; rare), and elements within the window (about 3e-5 of
// random values near the int8 range). A scale whose reciprocal is not a normal float (below
// 2^-126 or above 2^126) takes the exact path for the whole call.
struct FastQuantize {
  float r = 1.0f;       // __frcp_rn(s)
  float window = 0.0f;  // 2^-22, or 0 when s is a power of two
  bool usable = false;  // r is a normal float
};

// divide_only: take the exact division for every element (QFORGE_CUDA_QUANTIZE_DIVIDE=1, for
// measuring the fast path against it).
__device__ __forceinline__ FastQuantize fast_quantize_setup(float scale, bool divide_only = false) {
  FastQuantize f;
  f.r = __frcp_rn(scale);
  f.usable = !divide_only && f.r >= 0x1p-126f && f.r <= 0x1.fffffep127f;  // false for NaN too
  const bool power_of_two = (__float_as_uint(scale) & 0x807FFFFFu) == 0 && scale >= 0x1p-126f;
  f.window = power_of_two ? 0.0f : 0x1p-22f;
  return f;
}

// The reference's code for x in q when this returns true; false: use quantize_value().
// Branch-free on purpose (bitwise & of the tests): a short-circuit && became a branch per
// element and made the fast path slower than the division it replaces.
__device__ __forceinline__ bool quantize_fast(float x, float r, float window,
                                              std::int32_t zero_point, std::int32_t qmin,
                                              std::int32_t qmax, std::int32_t& q) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23, bits 0x4B400000
  const float p = __fmul_rn(x, r);
  const float y = __fadd_rn(p, kMagic);
  const float t = __fsub_rn(p, __fsub_rn(y, kMagic));
  const float ap = fabsf(p);
  const bool ok = (ap < 0x1p21f) & (__fsub_rn(0.5f, fabsf(t)) >= __fmul_rn(ap, window));
  const std::int32_t v = __float_as_int(y) - 0x4B400000 + zero_point;  // rint(p) + z, exact
  q = min(max(v, qmin), qmax);
  return ok;
}

// quantize_value for G values sharing one scale: the fast path, and the exact division for the
// elements it does not vouch for (or for all of them when the scale has no normal reciprocal).
// How often: random float32 values about one element in 30 000; bfloat16 values with a decimal
// scale such as 0.03 hit true near-ties (1.125 / 0.03 = 37.5) about once in 160 elements, so the
// division runs per flagged element, not for the whole group.
template <int G>
__device__ __forceinline__ void quantize_values(const float (&v)[G], std::int32_t (&c)[G],
                                                float scale, const FastQuantize& fast,
                                                std::int32_t zero_point, std::int32_t qmin,
                                                std::int32_t qmax) {
  static_assert(G <= 32, "one flag bit per element");
  const float r = fast.r, window = fast.window;
  std::uint32_t redo = 0;
#pragma unroll
  for (int e = 0; e < G; ++e)
    redo |=
        static_cast<std::uint32_t>(!quantize_fast(v[e], r, window, zero_point, qmin, qmax, c[e]))
        << e;
  if (!fast.usable) redo = 0xFFFFFFFFu;
  if (redo != 0) {
#pragma unroll
    for (int e = 0; e < G; ++e)
      if ((redo >> e) & 1u) c[e] = quantize_value(v[e], scale, zero_point, qmin, qmax);
  }
}

// ---- the exact quotient without a division, clamp in float32, for codes of at most 8 bits ----
//
// quantize_values' window test flags true near-ties (bfloat16 data with a decimal scale such as
// 0.03 hits one element in about 160: 1.125 / 0.03 = 37.5), and a warp in which any lane flags
// waits for that lane's division. This variant computes the reference's quotient itself,
// correctly rounded, with one multiply and two FMAs, and needs no window:
//   p0 = RN(x * r), r = RN(1/s);  e = RN(x - p0 * s) (one FMA);  p = RN(p0 + e * r) (one FMA).
// Markstein's theorem (Handbook of Floating-Point Arithmetic, "Markstein's division"): when r is
// within half an ulp of 1/s and p0 within one ulp of x/s, e is exact and p = RN(x / s), the
// reference's v, barring overflow and underflow. Here r = RN(1/s) is a normal float; p0 =
// RN(x * r) is within one ulp of x/s. Underflow: e falls below 2^-126 only when |x| < 2^-103
// (|e| <= 2^-23 |x|), and with s >= 2^-100 (checked once per call) then |x / s| < 1/8: p and v
// both round to 0. Overflow: x * r infinite (|x / s| near FLT_MAX or beyond), or x infinite or
// NaN, makes p NaN, which the test below sends to the division. A host simulation of 243
// million cases (every finite bfloat16 value and random float32 values against 2000 scales
// from 2^-100 to 2^100, near-ties and their neighbours) found no code that differs.
// Then the clamp: lo = qmin - z, hi = qmax - z (integers), pc = clamp(p, lo, hi) with NaN-
// propagating min/max; rint(pc) = clamp(rint(p), lo, hi) (rint is monotonic, lo and hi are
// integers), so the code is sat(rint(v) + z). |pc| <= L = max(|lo|, |hi|) < 2^21, so
// y = pc + 1.5 * 2^23 lies where floats are the integers and rounds pc to an integer with ties
// to even (1.5 * 2^23 is even); the code is bits(y) - bits(1.5 * 2^23) + z. L > 2^20 (zero
// points far outside the range) takes the division for the whole call.
struct FastClamp {
  float r = 1.0f;  // __frcp_rn(s)
  float s = 1.0f;
  float lo = 0.0f, hi = 0.0f;
  std::int32_t offset = 0;  // z - bits(1.5 * 2^23)
  bool usable = false;
};

__device__ __forceinline__ FastClamp fast_clamp_setup(float scale, std::int32_t zero_point,
                                                      std::int32_t qmin, std::int32_t qmax,
                                                      bool divide_only = false) {
  FastClamp f;
  f.r = __frcp_rn(scale);
  f.s = scale;
  const long long lo = static_cast<long long>(qmin) - zero_point,
                  hi = static_cast<long long>(qmax) - zero_point;
  const long long l = max(lo < 0 ? -lo : lo, hi < 0 ? -hi : hi);
  f.usable = !divide_only && scale >= 0x1p-100f && f.r >= 0x1p-126f && f.r <= 0x1.fffffep127f &&
             l <= (1LL << 20);  // false for a NaN scale too
  f.lo = static_cast<float>(lo);
  f.hi = static_cast<float>(hi);
  f.offset = zero_point - 0x4B400000;
  return f;
}

__device__ __forceinline__ float max_nan(float a, float b) {
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}
__device__ __forceinline__ float min_nan(float a, float b) {
  float d;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// The reference's code for x in q, and the clamped quotient it came from: when that is NaN (x NaN
// or infinite, or x * r overflowed) q is meaningless and quantize_value() must decide.
__device__ __forceinline__ float quantize_fast_clamped(float x, const FastClamp& f,
                                                       std::int32_t& q) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23, bits 0x4B400000
  const float p0 = __fmul_rn(x, f.r);
  const float p = __fmaf_rn(__fmaf_rn(-p0, f.s, x), f.r, p0);  // RN(x / s), Markstein
  const float pc = min_nan(max_nan(p, f.lo), f.hi);
  q = __float_as_int(__fadd_rn(pc, kMagic)) + f.offset;
  return pc;
}

// quantize_values through quantize_fast_clamped (same codes). The NaN test is one sum per group:
// every clamped quotient is finite (|pc| <= 2^20) unless it is NaN, so the sum is NaN exactly
// when one of them is, and then the whole group takes the division. The adds run on the FMA
// pipe; the first version's compare, select and OR per element took three integer-pipe slots,
// which issue at half the FMA rate.
template <int G>
__device__ __forceinline__ void quantize_values_clamped(const float (&v)[G], std::int32_t (&c)[G],
                                                        float scale, const FastClamp& fast,
                                                        std::int32_t zero_point, std::int32_t qmin,
                                                        std::int32_t qmax) {
  float sum = 0.0f;
#pragma unroll
  for (int e = 0; e < G; ++e) sum = __fadd_rn(sum, quantize_fast_clamped(v[e], fast, c[e]));
  if (!fast.usable || sum != sum) {
#pragma unroll
    for (int e = 0; e < G; ++e) c[e] = quantize_value(v[e], scale, zero_point, qmin, qmax);
  }
}

// reference::dequantize_value: q - z is exact in float32 (|q - z| <= 65535); one rounding.
__device__ __forceinline__ float dequantize_value(std::int32_t q, float scale,
                                                  std::int32_t zero_point) {
  return __fmul_rn(static_cast<float>(q - zero_point), scale);
}

// reference::requantize_value in float_multiplier mode.
__device__ __forceinline__ std::int32_t requantize_float(std::int32_t c, float multiplier,
                                                         std::int32_t zero_point, std::int32_t qmin,
                                                         std::int32_t qmax) {
  const float v = __fmul_rn(__int2float_rn(c), multiplier);
  const float r = __fadd_rn(rintf(v), static_cast<float>(zero_point));
  if (r <= static_cast<float>(qmin)) return qmin;
  if (r >= static_cast<float>(qmax)) return qmax;
  return static_cast<std::int32_t>(r);
}

// ---- TFLite's fixed-point requantization, as reference/fixed_point.cpp defines it ----
struct FixedPoint {
  std::int32_t multiplier;
  int shift;
};

// reference::quantize_multiplier for a finite multiplier whose shift is at most 31 (the host
// checks the largest multiplier of a call with the reference function, which throws past that).
__device__ __forceinline__ FixedPoint quantize_multiplier(double real) {
  if (real == 0.0) return {0, 0};
  int shift = 0;
  const double q = frexp(real, &shift);
  long long q_fixed = static_cast<long long>(round(q * 2147483648.0));  // half away from zero
  if (q_fixed == (1LL << 31) || q_fixed == -(1LL << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) return {0, 0};
  return {static_cast<std::int32_t>(q_fixed), shift};
}

__device__ __forceinline__ std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a,
                                                                              std::int32_t b) {
  if (a == b && a == INT32_MIN) return INT32_MAX;
  const long long ab = static_cast<long long>(a) * static_cast<long long>(b);
  const long long nudge = ab >= 0 ? (1LL << 30) : (1LL - (1LL << 30));
  return static_cast<std::int32_t>((ab + nudge) / (1LL << 31));
}

__device__ __forceinline__ std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) {
  if (exponent <= 0) return x;
  if (exponent > 62) exponent = 62;
  const long long v = x;
  const long long mask = (1LL << exponent) - 1;
  const long long remainder = v & mask;
  const long long threshold = (mask >> 1) + (v < 0 ? 1 : 0);
  return static_cast<std::int32_t>((v >> exponent) + (remainder > threshold ? 1 : 0));
}

__device__ __forceinline__ std::int32_t multiply_by_quantized_multiplier(std::int32_t x,
                                                                         FixedPoint m) {
  const int left_shift = m.shift > 0 ? m.shift : 0;
  const int right_shift = m.shift > 0 ? 0 : -m.shift;
  long long shifted = static_cast<long long>(x) * (1LL << left_shift);
  shifted = shifted < INT32_MIN ? INT32_MIN : (shifted > INT32_MAX ? INT32_MAX : shifted);
  return rounding_divide_by_pot(
      saturating_rounding_doubling_high_mul(static_cast<std::int32_t>(shifted), m.multiplier),
      right_shift);
}

// reference::detail::requantize_fixed.
__device__ __forceinline__ std::int32_t requantize_fixed(std::int32_t c, FixedPoint m,
                                                         std::int32_t zero_point, std::int32_t qmin,
                                                         std::int32_t qmax) {
  const long long y = static_cast<long long>(multiply_by_quantized_multiplier(c, m)) + zero_point;
  return static_cast<std::int32_t>(y < qmin ? qmin : (y > qmax ? qmax : y));
}

}  // namespace qforge::cuda::dev
