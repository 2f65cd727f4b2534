// Pieces shared by the element-wise kernels: loading float32/float16/bfloat16 values and
// walking the (scale, zero point) pair index of consecutive elements without a 64-bit division
// per element (one division per thread, then counters).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/quantize.h"

namespace qforge::cuda::dev {

// Elements handled by one thread: 16 bytes of int8 output, four float4 loads of float32 input.
inline constexpr int kVec = 16;

template <FloatType T>
__device__ __forceinline__ float load_float(const void* x, std::int64_t i) {
  if constexpr (T == FloatType::f32) {
    return static_cast<const float*>(x)[i];
  } else if constexpr (T == FloatType::f16) {
    return __half2float(static_cast<const __half*>(x)[i]);
  } else {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(x)[i]);
  }
}

// Loads kVec consecutive values starting at element i (16-byte aligned, all in range).
template <FloatType T>
__device__ __forceinline__ void load_float_vec(const void* x, std::int64_t i, float (&v)[kVec]) {
  if constexpr (T == FloatType::f32) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(x) + i);
#pragma unroll
    for (int j = 0; j < kVec / 4; ++j) {
      const float4 f = p[j];
      v[4 * j] = f.x;
      v[4 * j + 1] = f.y;
      v[4 * j + 2] = f.z;
      v[4 * j + 3] = f.w;
    }
  } else {
    const uint4* p = reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(x) + i);
#pragma unroll
    for (int j = 0; j < kVec / 8; ++j) {
      const uint4 u = p[j];
      const std::uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const auto lo = static_cast<unsigned short>(w[h] & 0xFFFFu);
        const auto hi = static_cast<unsigned short>(w[h] >> 16);
        if constexpr (T == FloatType::f16) {
          v[8 * j + 2 * h] = __half2float(__ushort_as_half(lo));
          v[8 * j + 2 * h + 1] = __half2float(__ushort_as_half(hi));
        } else {
          v[8 * j + 2 * h] = __bfloat162float(__ushort_as_bfloat16(lo));
          v[8 * j + 2 * h + 1] = __bfloat162float(__ushort_as_bfloat16(hi));
        }
      }
    }
  }
}

// The pair index of element i, then of i + 1, i + 2, ... (see PairIndexing).
struct PairCursor {
  std::int64_t a = 0;     // per_channel: i % inner;        block: column i % inner
  std::int64_t b = 0;     // per_channel: channel;          block: position inside the block
  std::int64_t pair = 0;  // the current pair index

  __device__ __forceinline__ void init(const PairIndexing& p, std::int64_t i) {
    if (p.layout == ParamLayout::per_channel) {
      a = i % p.inner;
      b = (i / p.inner) % p.extent;
      pair = b;
    } else if (p.layout == ParamLayout::block) {
      a = i % p.inner;
      b = a % p.block;
      pair = (i / p.inner) * p.extent + a / p.block;
    } else {
      pair = 0;
    }
  }

  __device__ __forceinline__ void advance(const PairIndexing& p) {
    if (p.layout == ParamLayout::per_channel) {
      if (++a == p.inner) {
        a = 0;
        if (++b == p.extent) b = 0;
        pair = b;
      }
    } else if (p.layout == ParamLayout::block) {
      ++a;
      ++b;
      // The last block of a row may be partial: a new row always starts a new pair.
      if (a == p.inner) {
        a = 0;
        b = 0;
        ++pair;
      } else if (b == p.block) {
        b = 0;
        ++pair;
      }
    }
  }

  __device__ __forceinline__ float scale(const PairIndexing& p) const {
    return p.scales ? p.scales[pair] : p.scale0;
  }
  __device__ __forceinline__ std::int32_t zero_point(const PairIndexing& p) const {
    return p.zero_points ? p.zero_points[pair] : p.zero_point0;
  }
};

}  // namespace qforge::cuda::dev
