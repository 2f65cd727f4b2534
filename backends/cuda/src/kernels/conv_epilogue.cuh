// The convolution's fused epilogue for one output element: zero-point compensation, the int32
// bias with its overflow check, then int32 out, requantization or dequantization with the
// activation's clamp, in the reference's order and roundings (reference/conv.cpp).
#pragma once

#include <climits>

#include "kernels/conv.h"
#include "kernels/epilogue.cuh"
#include "kernels/numerics.cuh"

namespace qforge::cuda::dev {

// The per-channel operands of the epilogue, loaded once for a column of outputs.
struct ConvColumn {
  std::uint32_t zx_wsum = 0, zw = 0;
  std::int32_t bias_i32 = 0;
  float bias_f32 = 0.0f, sw = 1.0f, multiplier = 1.0f;
  // fixed point: the multiplier, its left and right shifts, and for the rounding division
  // half = 2^(right - 1) and neg = -1 (0 when right == 0)
  std::int32_t fixed_multiplier = 0, left = 0, right = 0, half = 0, neg = 0;
};

__device__ __forceinline__ ConvColumn conv_column(const ConvEpilogue& e, std::int64_t o) {
  ConvColumn c;
  if (e.wsum) c.zx_wsum = static_cast<std::uint32_t>(e.zx) * static_cast<std::uint32_t>(e.wsum[o]);
  if (e.need_xsum) c.zw = static_cast<std::uint32_t>(at(e.zw, o));
  if (e.bias_i32) c.bias_i32 = e.bias_i32[o];
  if (e.bias_f32) c.bias_f32 = e.bias_f32[o];
  if (e.kind == ConvOut::dequantize) c.sw = at(e.sw, o);
  if (e.kind == ConvOut::requantize) {
    if (e.fixed_multiplier) {
      const std::int32_t shift = e.fixed_shift[o];  // within [-31, 31] (quantize_multiplier)
      c.fixed_multiplier = e.fixed_multiplier[o];
      c.left = shift > 0 ? shift : 0;
      c.right = shift > 0 ? 0 : -shift;
      c.half = c.right > 0 ? 1 << (c.right - 1) : 0;
      c.neg = c.right > 0 ? -1 : 0;
    } else {
      c.multiplier = e.multiplier[o];
    }
  }
  return c;
}

// requantize_fixed (numerics.cuh) with a channel's shifts computed once, then the activation's
// clamp: the same bits in fewer instructions.
// - saturating_rounding_doubling_high_mul(a, b) adds 2^30 (a * b >= 0) or 1 - 2^30 and divides by
//   2^31 toward zero; for a negative sum, truncation is floor((sum + 2^31 - 1) / 2^31), so both
//   cases are floor((a * b + 2^30) / 2^31): one wide multiply-add and a shift. It stays inside
//   int32 unless b == INT32_MIN, the one saturating case, which keeps the reference's form.
// - rounding_divide_by_pot(h, r) rounds half away from zero: floor((h + 2^(r-1) - [h < 0]) / 2^r)
//   for r > 0 (remainder > threshold is exactly that carry), evaluated in 64 bits so that the
//   addition cannot wrap; r == 0 adds nothing.
// The zero point is added after clamping to +-2^24, which changes no 8-bit result.
__device__ __forceinline__ std::int32_t requantize_fixed_column(std::int32_t x, const ConvColumn& c,
                                                                const ConvEpilogue& e) {
  std::int32_t a = x;
  if (c.left > 0) {
    const long long s = static_cast<long long>(x) * (1LL << c.left);
    a = s < INT32_MIN ? INT32_MIN : s > INT32_MAX ? INT32_MAX : static_cast<std::int32_t>(s);
  }
  std::int32_t h;
  if (c.fixed_multiplier != INT32_MIN) {
    h = static_cast<std::int32_t>((static_cast<long long>(a) * c.fixed_multiplier + (1LL << 30)) >>
                                  31);
  } else {
    h = saturating_rounding_doubling_high_mul(a, c.fixed_multiplier);
  }
  const long long t = static_cast<long long>(h) + (c.half + ((h >> 31) & c.neg));
  h = static_cast<std::int32_t>(t >> c.right);
  constexpr std::int32_t kBound = 1 << 24;
  h = h < -kBound ? -kBound : h > kBound ? kBound : h;
  const std::int32_t y = h + e.zy;
  // qmin <= qlo and qhi <= qmax, so one clamp does both of the reference's.
  return y < e.qlo ? e.qlo : y > e.qhi ? e.qhi : y;
}

// The output value of a column's element as the bits it is stored with (the code in the low
// byte for requantize, the int32 or the float32 bits otherwise): raw is C' (or the exact sum
// when the compensation fields are unset), xsum the sum of the pixel's gathered codes.
__device__ __forceinline__ std::uint32_t conv_output(const ConvEpilogue& e, const ConvColumn& col,
                                                     std::int32_t raw, std::int32_t xsum) {
  auto c = static_cast<std::uint32_t>(raw) - col.zx_wsum;
  if (e.need_xsum) {
    c -= col.zw * static_cast<std::uint32_t>(xsum);
    c += static_cast<std::uint32_t>(e.k) * static_cast<std::uint32_t>(e.zx) * col.zw;
  }
  std::int32_t acc = static_cast<std::int32_t>(c);
  if (e.bias_i32) {
    const long long v = static_cast<long long>(acc) + col.bias_i32;
    if (v < INT_MIN || v > INT_MAX) *e.overflow = 1;
    acc = static_cast<std::int32_t>(v);
  }
  switch (e.kind) {
    case ConvOut::int32: return static_cast<std::uint32_t>(acc);
    case ConvOut::requantize: {
      if (e.fixed_multiplier)
        return static_cast<std::uint32_t>(requantize_fixed_column(acc, col, e)) & 0xFFu;
      std::int32_t q = requantize_float(acc, col.multiplier, e.zy, e.qmin, e.qmax);
      q = q < e.qlo ? e.qlo : q > e.qhi ? e.qhi : q;
      return static_cast<std::uint32_t>(q) & 0xFFu;
    }
    case ConvOut::dequantize: {
      float v = __fmul_rn(__fmul_rn(__int2float_rn(acc), e.sx), col.sw);
      if (e.bias_f32) v = __fadd_rn(v, col.bias_f32);
      return __float_as_uint(v < e.lo ? e.lo : v > e.hi ? e.hi : v);
    }
  }
  return 0;
}

__device__ __forceinline__ std::uint32_t conv_output(const ConvEpilogue& e, std::int64_t o,
                                                     std::int32_t raw, std::int32_t xsum) {
  return conv_output(e, conv_column(e, o), raw, xsum);
}

// Y's element index of output pixel m (n * OH * OW + oh * OW + ow) and channel o.
__device__ __forceinline__ std::int64_t conv_index(const ConvEpilogue& e, std::int64_t pixels,
                                                   std::int64_t channels, std::int64_t m,
                                                   std::int64_t o) {
  if (!e.nchw) return m * channels + o;
  const std::int64_t n = m / pixels;
  return (n * channels + o) * pixels + (m - n * pixels);
}

// Stores conv_output's bits at element `index` of Y.
__device__ __forceinline__ void conv_put(const ConvEpilogue& e, std::int64_t index,
                                         std::uint32_t bits) {
  if (e.kind == ConvOut::requantize) static_cast<std::uint8_t*>(e.y)[index] = bits & 0xFFu;
  else static_cast<std::uint32_t*>(e.y)[index] = bits;
}

__device__ __forceinline__ void conv_store_inline(const ConvEpilogue& e, std::int64_t pixels,
                                                  std::int64_t channels, std::int64_t m,
                                                  std::int64_t o, std::int32_t raw,
                                                  std::int32_t xsum) {
  conv_put(e, conv_index(e, pixels, channels, m, o), conv_output(e, o, raw, xsum));
}

// The same out of line, for the implicit GEMM: inlined into the 64 stores of an unrolled tile,
// its three output kinds made the kernel's code too large for the instruction cache. The
// depthwise kernel, one store per thread, keeps the inline form.
static __device__ __noinline__ void conv_store(const ConvEpilogue& e, std::int64_t pixels,
                                               std::int64_t channels, std::int64_t m,
                                               std::int64_t o, std::int32_t raw,
                                               std::int32_t xsum) {
  conv_store_inline(e, pixels, channels, m, o, raw, xsum);
}

}  // namespace qforge::cuda::dev
