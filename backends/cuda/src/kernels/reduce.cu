// Two launches: a grid-stride pass in which each block reduces its share into one partial, then
// one block that folds the partials in a fixed order (deterministic, no float atomics).
#include <algorithm>

#include "check.h"
#include "kernels/elementwise.cuh"
#include "kernels/reduce.h"

namespace qforge::cuda {
namespace {

constexpr int kThreads = 256;

// Plain data (no member initialisers) so that it may live in __shared__ memory.
struct Acc {
  float lo, hi, amax;
  std::uint64_t first_inf, first_nan;

  static __device__ __forceinline__ Acc identity() {
    return {0.0f, 0.0f, 0.0f, kNoIndex, kNoIndex};
  }

  __device__ __forceinline__ void add(float v, std::uint64_t i) {
    if (isnan(v)) {
      first_nan = i < first_nan ? i : first_nan;
      return;
    }
    if (isinf(v)) first_inf = i < first_inf ? i : first_inf;
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
    amax = fmaxf(amax, fabsf(v));
  }
  __device__ __forceinline__ void merge(const Acc& o) {
    lo = fminf(lo, o.lo);
    hi = fmaxf(hi, o.hi);
    amax = fmaxf(amax, o.amax);
    first_inf = o.first_inf < first_inf ? o.first_inf : first_inf;
    first_nan = o.first_nan < first_nan ? o.first_nan : first_nan;
  }
};

__device__ __forceinline__ Acc shuffle_down(const Acc& a, int offset) {
  Acc b = a;
  b.lo = __shfl_down_sync(0xFFFFFFFFu, a.lo, offset);
  b.hi = __shfl_down_sync(0xFFFFFFFFu, a.hi, offset);
  b.amax = __shfl_down_sync(0xFFFFFFFFu, a.amax, offset);
  b.first_inf = __shfl_down_sync(0xFFFFFFFFu, a.first_inf, offset);
  b.first_nan = __shfl_down_sync(0xFFFFFFFFu, a.first_nan, offset);
  return b;
}

__device__ Acc block_reduce(Acc a) {
  __shared__ Acc warps[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) a.merge(shuffle_down(a, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warps[warp] = a;
  __syncthreads();
  if (warp == 0) {
    a = lane < kThreads / 32 ? warps[lane] : Acc::identity();
    for (int o = 16; o > 0; o >>= 1) a.merge(shuffle_down(a, o));
  }
  return a;  // valid in thread 0
}

__device__ __forceinline__ RangeStats to_stats(const Acc& a) {
  RangeStats s;
  s.lo = a.lo;
  s.hi = a.hi;
  s.amax = a.amax;
  s.sx = fmaxf(__fdiv_rn(a.amax, 127.0f), 1e-8f);
  s.first_inf = a.first_inf;
  s.first_nan = a.first_nan;
  return s;
}

// Groups of 4 elements, adjacent across the grid (coalesced), grid-stride.
template <FloatType T>
__global__ void __launch_bounds__(kThreads)
    range_partial_kernel(const void* __restrict__ x, std::int64_t n, bool aligned,
                         RangeStats* partials) {
  Acc acc = Acc::identity();
  const std::int64_t groups = n / 4;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kThreads;
  for (std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; g < groups;
       g += stride) {
    const std::int64_t i0 = g * 4;
    float v[4];
    if (aligned) {
      if constexpr (T == FloatType::f32) {
        const float4 f = *reinterpret_cast<const float4*>(static_cast<const float*>(x) + i0);
        v[0] = f.x;
        v[1] = f.y;
        v[2] = f.z;
        v[3] = f.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = dev::load_float<T>(x, i0 + e);
      }
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = dev::load_float<T>(x, i0 + e);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) acc.add(v[e], static_cast<std::uint64_t>(i0 + e));
  }
  for (std::int64_t i = groups * 4 + static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
       i < n; i += stride)
    acc.add(dev::load_float<T>(x, i), static_cast<std::uint64_t>(i));
  acc = block_reduce(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = to_stats(acc);
}

__global__ void __launch_bounds__(kThreads)
    range_final_kernel(const RangeStats* __restrict__ partials, int count, RangeStats* out) {
  Acc acc = Acc::identity();
  for (int i = threadIdx.x; i < count; i += kThreads) {
    const RangeStats& p = partials[i];
    acc.merge({p.lo, p.hi, p.amax, p.first_inf, p.first_nan});
  }
  acc = block_reduce(acc);
  if (threadIdx.x == 0) *out = to_stats(acc);
}

}  // namespace

void launch_range_stats(FloatType type, const void* x, std::int64_t n, RangeStats* partials,
                        RangeStats* out, int multiprocessors, cudaStream_t stream) {
  const std::int64_t groups = (n + 3) / 4;
  // Enough blocks to fill the GPU a few times over, never more than there is work for.
  const std::int64_t wanted = std::max<std::int64_t>(1, (groups + kThreads - 1) / kThreads);
  const int blocks = static_cast<int>(std::min<std::int64_t>(
      {wanted, std::int64_t{8} * std::max(1, multiprocessors), kRangeStatsMaxBlocks}));
  const bool aligned = (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0;
  switch (type) {
    case FloatType::f32:
      range_partial_kernel<FloatType::f32>
          <<<blocks, kThreads, 0, stream>>>(x, n, aligned, partials);
      break;
    case FloatType::f16:
      range_partial_kernel<FloatType::f16>
          <<<blocks, kThreads, 0, stream>>>(x, n, aligned, partials);
      break;
    case FloatType::bf16:
      range_partial_kernel<FloatType::bf16>
          <<<blocks, kThreads, 0, stream>>>(x, n, aligned, partials);
      break;
  }
  check_launch("range_partial_kernel");
  range_final_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, out);
  check_launch("range_final_kernel");
}

}  // namespace qforge::cuda
