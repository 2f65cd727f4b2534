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
__device__ __forceinline__ std::int32_t quantize_value(float x, float scale, std::int32_t zero_point,
                                                       std::int32_t qmin, std::int32_t qmax) {
  const float v = __fdiv_rn(x, scale);
  if (isnan(v)) return zero_point;
  const float r = __fadd_rn(rintf(v), static_cast<float>(zero_point));
  if (r <= static_cast<float>(qmin)) return qmin;
  if (r >= static_cast<float>(qmax)) return qmax;
  return static_cast<std::int32_t>(r);
}

// reference::dequantize_value: q - z is exact in float32 (|q - z| <= 65535); one rounding.
__device__ __forceinline__ float dequantize_value(std::int32_t q, float scale, std::int32_t zero_point) {
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

__device__ __forceinline__ std::int32_t multiply_by_quantized_multiplier(std::int32_t x, FixedPoint m) {
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
