// The convolution's fused epilogue for one output element: zero-point compensation, the int32
// bias with its overflow check, then int32 out, requantization or dequantization with the
// activation's clamp, in the reference's order and roundings (reference/conv.cpp).
#pragma once

#include <climits>

#include "kernels/conv.h"
#include "kernels/epilogue.cuh"
#include "kernels/numerics.cuh"

namespace qforge::cuda::dev {

// m: output pixel (n * OH * OW + oh * OW + ow); o: output channel; raw: C' (or the exact sum
// when the compensation fields are unset); xsum: sum of the pixel's gathered codes.
__device__ __forceinline__ void conv_store_inline(const ConvEpilogue& e, std::int64_t pixels,
                                                  std::int64_t channels, std::int64_t m,
                                                  std::int64_t o, std::int32_t raw,
                                                  std::int32_t xsum) {
  auto c = static_cast<std::uint32_t>(raw);
  if (e.wsum) c -= static_cast<std::uint32_t>(e.zx) * static_cast<std::uint32_t>(e.wsum[o]);
  if (e.need_xsum) {
    const auto zw = static_cast<std::uint32_t>(at(e.zw, o));
    c -= zw * static_cast<std::uint32_t>(xsum);
    c += static_cast<std::uint32_t>(e.k) * static_cast<std::uint32_t>(e.zx) * zw;
  }
  std::int32_t acc = static_cast<std::int32_t>(c);
  if (e.bias_i32) {
    const long long v = static_cast<long long>(acc) + e.bias_i32[o];
    if (v < INT_MIN || v > INT_MAX) *e.overflow = 1;
    acc = static_cast<std::int32_t>(v);
  }
  std::int64_t index = m * channels + o;
  if (e.nchw) {
    const std::int64_t n = m / pixels;
    index = (n * channels + o) * pixels + (m - n * pixels);
  }
  switch (e.kind) {
    case ConvOut::int32: static_cast<std::int32_t*>(e.y)[index] = acc; break;
    case ConvOut::requantize: {
      std::int32_t q = e.fixed_multiplier
                           ? requantize_fixed(acc, {e.fixed_multiplier[o], e.fixed_shift[o]}, e.zy,
                                              e.qmin, e.qmax)
                           : requantize_float(acc, e.multiplier[o], e.zy, e.qmin, e.qmax);
      q = q < e.qlo ? e.qlo : q > e.qhi ? e.qhi : q;
      static_cast<std::uint8_t*>(e.y)[index] = static_cast<std::uint8_t>(q & 0xFF);
      break;
    }
    case ConvOut::dequantize: {
      float v = __fmul_rn(__fmul_rn(__int2float_rn(acc), e.sx), at(e.sw, o));
      if (e.bias_f32) v = __fadd_rn(v, e.bias_f32[o]);
      static_cast<float*>(e.y)[index] = v < e.lo ? e.lo : v > e.hi ? e.hi : v;
      break;
    }
  }
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
