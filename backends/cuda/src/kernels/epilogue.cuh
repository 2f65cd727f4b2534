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
// The same through the read-only path: the compiler may then issue these loads ahead of the
// epilogue's stores instead of after each one (scales and bias never alias the output).
__device__ __forceinline__ float at_ro(const FloatVec& v, std::int64_t i) {
  return v.ptr ? __ldg(v.ptr + i * v.stride) : v.value;
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

// Stores columns n and n + 1 of row m (n even; either may lie outside the matrix): every
// epilogue kind, compensation and edge. Out of line on purpose (see FastPath).
static __device__ __noinline__ void store_pair_general(const Epilogue& e, std::int64_t m,
                                                       std::int64_t n, std::int32_t raw0,
                                                       std::int32_t raw1) {
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
          *reinterpret_cast<__half2*>(out) =
              __halves2half2(__float2half_rn(v0), __float2half_rn(v1));
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

// The entry point of every kernel's epilogue: the inline fast path for whole pairs of the
// common kinds, the general function otherwise. Same results either way.
__device__ __forceinline__ void store_pair(const Epilogue& e, std::int64_t m, std::int64_t n,
                                           std::int32_t raw0, std::int32_t raw1) {
  if (e.fast != FastPath::none && m < e.m && n + 1 < e.n) {
    const std::int64_t off = m * e.ldc + n;
    if (e.fast == FastPath::i32) {
      *reinterpret_cast<int2*>(static_cast<std::int32_t*>(e.out) + off) = make_int2(raw0, raw1);
      return;
    }
    if (e.fast == FastPath::acc) {
      int* out = static_cast<int*>(e.out) + off;
      atomicAdd(out, raw0);
      atomicAdd(out + 1, raw1);
      return;
    }
    const float sa = at_ro(e.sa, m);
    float v0 = __fmul_rn(__fmul_rn(__int2float_rn(raw0), sa), at_ro(e.sb, n));
    float v1 = __fmul_rn(__fmul_rn(__int2float_rn(raw1), sa), at_ro(e.sb, n + 1));
    if (e.bias) {
      v0 = __fadd_rn(v0, __ldg(e.bias + n));
      v1 = __fadd_rn(v1, __ldg(e.bias + n + 1));
    }
    if (e.fast == FastPath::f32)
      *reinterpret_cast<float2*>(static_cast<float*>(e.out) + off) = make_float2(v0, v1);
    else if (e.fast == FastPath::f16)
      *reinterpret_cast<__half2*>(static_cast<__half*>(e.out) + off) =
          __halves2half2(__float2half_rn(v0), __float2half_rn(v1));
    else
      *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(e.out) + off) =
          __halves2bfloat162(__float2bfloat16_rn(v0), __float2bfloat16_rn(v1));
    return;
  }
  store_pair_general(e, m, n, raw0, raw1);
}

// Stores one thread's accumulator fragment: NR rows (row(r), increasing) by NC column pairs
// (col(c), increasing, even), raw values get(r, c, 0 | 1). When the whole fragment lies inside
// the matrix and the epilogue has a fast path, the column scales and bias of a batch of 8
// column pairs are loaded together before any of the batch's stores: read-only loads issued
// back to back overlap their latencies, where one load per stored pair would wait in turn.
template <int NR, int NC, class Row, class Col, class Get>
__device__ __forceinline__ void store_fragment(const Epilogue& e, Row row, Col col, Get get) {
  const bool inside = e.fast != FastPath::none && row(NR - 1) < e.m && col(NC - 1) + 1 < e.n;
  if (!inside) {
#pragma unroll
    for (int r = 0; r < NR; ++r)
#pragma unroll
      for (int c = 0; c < NC; ++c) store_pair(e, row(r), col(c), get(r, c, 0), get(r, c, 1));
    return;
  }
  if (e.fast == FastPath::i32 || e.fast == FastPath::acc) {
#pragma unroll
    for (int r = 0; r < NR; ++r)
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        int* out = static_cast<int*>(e.out) + row(r) * e.ldc + col(c);
        if (e.fast == FastPath::i32) {
          *reinterpret_cast<int2*>(out) = make_int2(get(r, c, 0), get(r, c, 1));
        } else {
          atomicAdd(out, get(r, c, 0));
          atomicAdd(out + 1, get(r, c, 1));
        }
      }
    return;
  }
  float sa[NR];
#pragma unroll
  for (int r = 0; r < NR; ++r) sa[r] = at_ro(e.sa, row(r));
  constexpr int kBatch = NC < 8 ? NC : 8;
  static_assert(NC % kBatch == 0, "column pairs come in whole batches");
#pragma unroll
  for (int c0 = 0; c0 < NC; c0 += kBatch) {
    float sb0[kBatch], sb1[kBatch], b0[kBatch], b1[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const std::int64_t n = col(c0 + j);
      sb0[j] = at_ro(e.sb, n);
      sb1[j] = at_ro(e.sb, n + 1);
      b0[j] = e.bias ? __ldg(e.bias + n) : 0.0f;
      b1[j] = e.bias ? __ldg(e.bias + n + 1) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j)
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        float v0 = __fmul_rn(__fmul_rn(__int2float_rn(get(r, c0 + j, 0)), sa[r]), sb0[j]);
        float v1 = __fmul_rn(__fmul_rn(__int2float_rn(get(r, c0 + j, 1)), sa[r]), sb1[j]);
        if (e.bias) {  // only then: adding +0.0 would turn a -0.0 result into +0.0
          v0 = __fadd_rn(v0, b0[j]);
          v1 = __fadd_rn(v1, b1[j]);
        }
        const std::int64_t off = row(r) * e.ldc + col(c0 + j);
        if (e.fast == FastPath::f32)
          *reinterpret_cast<float2*>(static_cast<float*>(e.out) + off) = make_float2(v0, v1);
        else if (e.fast == FastPath::f16)
          *reinterpret_cast<__half2*>(static_cast<__half*>(e.out) + off) =
              __halves2half2(__float2half_rn(v0), __float2half_rn(v1));
        else
          *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(e.out) + off) =
              __halves2bfloat162(__float2bfloat16_rn(v0), __float2bfloat16_rn(v1));
      }
  }
}

}  // namespace qforge::cuda::dev
