// The fused GEMM epilogue, shared by every kernel: zero-point compensation, then int32 out,
// dequantization to float32/float16/bfloat16 (with bias), or requantization to int8/uint8, for
// a pair of adjacent columns (n, n + 1) of one row — the unit the mma.sync accumulator
// fragment and the DP4A thread tile both hold.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/gemm.h"
#include "kernels/numerics.cuh"

namespace qforge::cuda::dev {

__device__ __forceinline__ std::int32_t at(const IntVec& v, std::int64_t i) {
  return v.ptr ? v.ptr[i * v.stride] : v.value;
}
__device__ __forceinline__ float at(const FloatVec& v, std::int64_t i) {
  return v.ptr ? v.ptr[i * v.stride] : v.value;
}

// Exact C from the raw int8 dot product (see gemm.h), in wrap-around uint32 arithmetic.
__device__ __forceinline__ std::int32_t compensate(const Epilogue& e, std::int64_t m,
                                                   std::int64_t n, std::int32_t raw) {
  auto c = static_cast<std::uint32_t>(raw);
  if (e.a_rowsum)
    c -= static_cast<std::uint32_t>(at(e.zb, n)) * static_cast<std::uint32_t>(e.a_rowsum[m]);
  if (e.b_colsum) {
    const auto za = static_cast<std::uint32_t>(at(e.za, m));
    c -= za * static_cast<std::uint32_t>(e.b_colsum[n]);
    if (e.a_rowsum)
      c += static_cast<std::uint32_t>(e.k) * za * static_cast<std::uint32_t>(at(e.zb, n));
  }
  return static_cast<std::int32_t>(c);
}

// matmul_dequant's value, in the reference's order and roundings.
__device__ __forceinline__ float dequantized(const Epilogue& e, std::int64_t m, std::int64_t n,
                                             std::int32_t c) {
  float v = __fmul_rn(__fmul_rn(__int2float_rn(c), at(e.sa, m)), at(e.sb, n));
  if (e.bias) v = __fadd_rn(v, e.bias[n]);
  return v;
}

// qlinear_matmul's value: the multiplier (sa * sb) / sy in float32, then requantize_value.
__device__ __forceinline__ std::int32_t requantized(const Epilogue& e, std::int64_t m,
                                                    std::int64_t n, std::int32_t c) {
  const float multiplier = __fdiv_rn(__fmul_rn(at(e.sa, m), at(e.sb, n)), e.sy);
  if (e.fixed_point)
    return requantize_fixed(c, quantize_multiplier(static_cast<double>(multiplier)), e.zy, e.qmin,
                            e.qmax);
  return requantize_float(c, multiplier, e.zy, e.qmin, e.qmax);
}

// Stores columns n and n + 1 of row m (n even; either may lie outside the matrix).
__device__ __forceinline__ void store_pair(const Epilogue& e, std::int64_t m, std::int64_t n,
                                           std::int32_t raw0, std::int32_t raw1) {
  if (m >= e.m || n >= e.n) return;
  const bool both = n + 1 < e.n;
  const bool paired = both && e.paired;
  const std::int64_t off = m * e.ldc + n;
  if (e.kind == EpilogueKind::accumulate) {
    int* out = static_cast<int*>(e.out) + off;
    atomicAdd(out, raw0);
    if (both) atomicAdd(out + 1, raw1);
    return;
  }
  const std::int32_t c0 = compensate(e, m, n, raw0);
  const std::int32_t c1 = both ? compensate(e, m, n + 1, raw1) : 0;
  switch (e.kind) {
    case EpilogueKind::int32_out: {
      std::int32_t* out = static_cast<std::int32_t*>(e.out) + off;
      if (paired) {
        *reinterpret_cast<int2*>(out) = make_int2(c0, c1);
      } else {
        out[0] = c0;
        if (both) out[1] = c1;
      }
      break;
    }
    case EpilogueKind::float_out: {
      const float v0 = dequantized(e, m, n, c0);
      const float v1 = both ? dequantized(e, m, n + 1, c1) : 0.0f;
      if (e.out_type == FloatType::f32) {
        float* out = static_cast<float*>(e.out) + off;
        if (paired) {
          *reinterpret_cast<float2*>(out) = make_float2(v0, v1);
        } else {
          out[0] = v0;
          if (both) out[1] = v1;
        }
      } else if (e.out_type == FloatType::f16) {
        __half* out = static_cast<__half*>(e.out) + off;
        if (paired) {
          *reinterpret_cast<__half2*>(out) = __halves2half2(__float2half_rn(v0), __float2half_rn(v1));
        } else {
          out[0] = __float2half_rn(v0);
          if (both) out[1] = __float2half_rn(v1);
        }
      } else {
        __nv_bfloat16* out = static_cast<__nv_bfloat16*>(e.out) + off;
        if (paired) {
          *reinterpret_cast<__nv_bfloat162*>(out) =
              __halves2bfloat162(__float2bfloat16_rn(v0), __float2bfloat16_rn(v1));
        } else {
          out[0] = __float2bfloat16_rn(v0);
          if (both) out[1] = __float2bfloat16_rn(v1);
        }
      }
      break;
    }
    case EpilogueKind::requantize: {
      std::uint8_t* out = static_cast<std::uint8_t*>(e.out) + off;
      const auto q0 = static_cast<std::uint8_t>(requantized(e, m, n, c0) & 0xFF);
      if (paired) {
        const auto q1 = static_cast<std::uint8_t>(requantized(e, m, n + 1, c1) & 0xFF);
        *reinterpret_cast<std::uint16_t*>(out) = static_cast<std::uint16_t>(q0 | (q1 << 8));
      } else {
        out[0] = q0;
        if (both) out[1] = static_cast<std::uint8_t>(requantized(e, m, n + 1, c1) & 0xFF);
      }
      break;
    }
    case EpilogueKind::accumulate: break;
  }
}

}  // namespace qforge::cuda::dev
