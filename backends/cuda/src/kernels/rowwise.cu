#include <type_traits>

#include "check.h"
#include "kernels/elementwise.cuh"
#include "kernels/numerics.cuh"
#include "kernels/quantize.h"
#include "kernels/rowwise.h"

namespace qforge::cuda {
namespace {

constexpr int kThreads = 256;

// Elements in 16 bytes of input: 4 float32 or 8 float16/bfloat16.
template <FloatType T>
constexpr int group_elems() {
  return T == FloatType::f32 ? 4 : 8;
}

template <FloatType T>
constexpr int sizeof_float() {
  return T == FloatType::f32 ? 4 : 2;
}

// Loads the G = group_elems<T>() values at element i: one 16-byte load when `vector` (16-byte
// aligned), element by element otherwise. float16/bfloat16 are widened exactly.
template <FloatType T>
__device__ __forceinline__ void load16(const void* x, std::int64_t i, bool vector,
                                       float (&v)[group_elems<T>()]) {
  if (!vector) {
#pragma unroll
    for (int e = 0; e < group_elems<T>(); ++e) v[e] = dev::load_float<T>(x, i + e);
    return;
  }
  if constexpr (T == FloatType::f32) {
    const float4 f = *reinterpret_cast<const float4*>(static_cast<const float*>(x) + i);
    v[0] = f.x;
    v[1] = f.y;
    v[2] = f.z;
    v[3] = f.w;
  } else {
    const uint4 u = *reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(x) + i);
    const std::uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const auto lo = static_cast<unsigned short>(w[h] & 0xFFFFu),
                 hi = static_cast<unsigned short>(w[h] >> 16);
      if constexpr (T == FloatType::f16) {
        v[2 * h] = __half2float(__ushort_as_half(lo));
        v[2 * h + 1] = __half2float(__ushort_as_half(hi));
      } else {
        v[2 * h] = __bfloat162float(__ushort_as_bfloat16(lo));
        v[2 * h + 1] = __bfloat162float(__ushort_as_bfloat16(hi));
      }
    }
  }
}

// Stores G int8 codes at q[i]: one G-byte store when `vector`, byte by byte otherwise.
template <int G>
__device__ __forceinline__ void store_codes(std::int8_t* q, std::int64_t i, bool vector,
                                            const std::int32_t (&c)[G]) {
  std::uint32_t w[G / 4];
#pragma unroll
  for (int h = 0; h < G / 4; ++h) {
    w[h] = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e)
      w[h] |= (static_cast<std::uint32_t>(c[4 * h + e]) & 0xFFu) << (8 * e);
  }
  if (vector) {
    if constexpr (G == 4) *reinterpret_cast<std::uint32_t*>(q + i) = w[0];
    else *reinterpret_cast<uint2*>(q + i) = make_uint2(w[0], w[1]);
  } else {
#pragma unroll
    for (int e = 0; e < G; ++e)
      q[i + e] = static_cast<std::int8_t>((w[e / 4] >> (8 * (e % 4))) & 0xFFu);
  }
}

// Rows too long for registers (or not 16-byte aligned): two passes over the row, the second
// from cache. Groups of 16 input bytes, adjacent across the block, so every warp access is
// one contiguous run.
template <FloatType T>
__global__ void __launch_bounds__(kThreads)
    rowwise_absmax_quantize_kernel(const void* __restrict__ x, std::int64_t cols,
                                   std::int8_t* __restrict__ q, float* __restrict__ scales,
                                   bool aligned, bool divide_only) {
  constexpr int G = group_elems<T>();
  __shared__ float warp_max[kThreads / 32];
  __shared__ float row_scale;
  const std::int64_t row = blockIdx.x;
  const std::int64_t base = row * cols;
  const std::int64_t groups = cols / G;  // whole groups; the tail (cols % G) goes element-wise

  float amax = 0.0f;
  for (std::int64_t g = threadIdx.x; g < groups; g += kThreads) {
    float v[G];
    load16<T>(x, base + g * G, aligned, v);
#pragma unroll
    for (int e = 0; e < G; ++e) amax = fmaxf(amax, fabsf(v[e]));  // fmaxf drops NaN
  }
  for (std::int64_t c = groups * G + threadIdx.x; c < cols; c += kThreads)
    amax = fmaxf(amax, fabsf(dev::load_float<T>(x, base + c)));
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_down_sync(0xFFFFFFFFu, amax, o));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = warp_max[0];
    for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, warp_max[w]);
    row_scale = fmaxf(__fdiv_rn(m, 127.0f), 1e-8f);
    scales[row] = row_scale;
  }
  __syncthreads();
  const float s = row_scale;
  const dev::FastClamp fast = dev::fast_clamp_setup(s, 0, -127, 127, divide_only);

  // Second pass over the row: it was just read by this block, so it comes from cache.
  for (std::int64_t g = threadIdx.x; g < groups; g += kThreads) {
    float v[G];
    load16<T>(x, base + g * G, aligned, v);
    std::int32_t c[G];
    dev::quantize_values_clamped<G>(v, c, s, fast, 0, -127, 127);
    store_codes<G>(q, base + g * G, aligned, c);
  }
  for (std::int64_t c = groups * G + threadIdx.x; c < cols; c += kThreads)
    q[base + c] = static_cast<std::int8_t>(
        dev::quantize_value(dev::load_float<T>(x, base + c), s, 0, -127, 127));
}

// Rows that fit in the block's registers (up to kResident groups of 16 bytes per thread) are
// read exactly once: load, reduce, quantize from the registers. The groups are held as raw
// 16-byte words and widened when used, so that 16-bit rows need few registers: 6 blocks of 256
// threads per SM for float16/bfloat16 (40 registers; 8 spilled much more). The first version
// held widened floats, used 62 registers, ran 4 blocks per SM and reached 0.55 of the copy
// bandwidth for bfloat16.
constexpr int kResident = 8;

// At most 32 values per thread whatever the width (8 groups of 4 float32, 4 groups of 8 halves).
template <FloatType T>
constexpr int resident_groups() {
  return T == FloatType::f32 ? kResident : kResident / 2;
}

// Widens a raw group of 16 bytes (exact for float16/bfloat16).
template <FloatType T>
__device__ __forceinline__ void unpack16(const uint4& u, float (&v)[group_elems<T>()]) {
  const std::uint32_t w[4] = {u.x, u.y, u.z, u.w};
  if constexpr (T == FloatType::f32) {
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = __uint_as_float(w[e]);
  } else {
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      if constexpr (T == FloatType::f16) {
        v[2 * h] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[h] & 0xFFFFu)));
        v[2 * h + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[h] >> 16)));
      } else {
        v[2 * h] = __uint_as_float(w[h] << 16);  // bfloat16 is the top half of a float32
        v[2 * h + 1] = __uint_as_float(w[h] & 0xFFFF0000u);
      }
    }
  }
}

template <typename T2>
__device__ __forceinline__ T2 bits_as(std::uint32_t w) {
  T2 v;
  static_assert(sizeof(T2) == 4);
  memcpy(&v, &w, 4);
  return v;
}
template <typename T2>
__device__ __forceinline__ std::uint32_t bits_of(const T2& v) {
  std::uint32_t w;
  memcpy(&w, &v, 4);
  return w;
}
template <FloatType T>
__device__ __forceinline__ void unpack_pair(std::uint32_t w, float (&v)[2]) {
  if constexpr (T == FloatType::f16) {
    v[0] = __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xFFFFu)));
    v[1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
  } else {
    v[0] = __uint_as_float(w << 16);
    v[1] = __uint_as_float(w & 0xFFFF0000u);
  }
}

template <FloatType T>
__global__ void __launch_bounds__(kThreads, T == FloatType::f32 ? 1 : 6)
    rowwise_resident_kernel(const void* __restrict__ x, std::int64_t cols,
                            std::int8_t* __restrict__ q, float* __restrict__ scales,
                            bool divide_only) {
  constexpr int G = group_elems<T>();
  __shared__ float warp_max[kThreads / 32];
  __shared__ float row_scale;
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * cols;
  constexpr int R = resident_groups<T>();
  const int groups = static_cast<int>(cols / G);
  uint4 raw[R];
  // Every load is issued before any value is used.
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int g = threadIdx.x + i * kThreads;
    raw[i] = g < groups ? *reinterpret_cast<const uint4*>(
                              static_cast<const std::uint8_t*>(x) +
                              (base + static_cast<std::int64_t>(g) * G) * sizeof_float<T>())
                        : make_uint4(0, 0, 0, 0);  // +0.0: does not change the maximum
  }
  float amax = 0.0f;
  if constexpr (T == FloatType::f32) {
#pragma unroll
    for (int i = 0; i < R; ++i) {
      float v[G];
      unpack16<T>(raw[i], v);
#pragma unroll
      for (int e = 0; e < G; ++e) amax = fmaxf(amax, fabsf(v[e]));  // fmaxf drops NaN
    }
  } else {
    // Two values per instruction in their own format (exact: widening is monotonic), and no
    // widened values for the compiler to keep alive until the quantize loop. The packed max,
    // like fmaxf, returns the other operand when one is NaN; m starts at +0, so never both.
    using T2 = std::conditional_t<T == FloatType::f16, __half2, __nv_bfloat162>;
    T2 m = bits_as<T2>(0u);
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const std::uint32_t w[4] = {raw[i].x, raw[i].y, raw[i].z, raw[i].w};
#pragma unroll
      for (int h = 0; h < 4; ++h) m = __hmax2(m, __habs2(bits_as<T2>(w[h])));
    }
    float v[2];
    unpack_pair<T>(bits_of(m), v);
    amax = fmaxf(v[0], v[1]);
  }
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_down_sync(0xFFFFFFFFu, amax, o));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = warp_max[0];
    for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, warp_max[w]);
    row_scale = fmaxf(__fdiv_rn(m, 127.0f), 1e-8f);
    scales[blockIdx.x] = row_scale;
  }
  __syncthreads();
  const float s = row_scale;
  const dev::FastClamp fast = dev::fast_clamp_setup(s, 0, -127, 127, divide_only);
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int g = threadIdx.x + i * kThreads;
    if (g < groups) {
      float v[G];
      unpack16<T>(raw[i], v);
      std::int32_t c[G];
      dev::quantize_values_clamped<G>(v, c, s, fast, 0, -127, 127);
      store_codes<G>(q, base + static_cast<std::int64_t>(g) * G, true, c);
    }
  }
}

}  // namespace

void launch_rowwise_absmax_quantize(FloatType type, const void* x, std::int64_t rows,
                                    std::int64_t cols, std::int8_t* q, float* scales,
                                    cudaStream_t stream) {
  if (rows <= 0) return;
  const bool divide_only = quantize_divide_only();
  // Vector accesses need every group of 16 input bytes aligned: rows of a whole number of
  // groups starting at a 16-byte aligned x, and codes stored 4 (float32) or 8 (16-bit input)
  // bytes at a time.
  const int g = type == FloatType::f32 ? 4 : 8;
  const bool aligned = (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0 &&
                       (reinterpret_cast<std::uintptr_t>(q) % static_cast<unsigned>(g)) == 0 &&
                       cols % g == 0;
  const auto grid = static_cast<unsigned>(rows);
  // Register-resident when the accesses are vectors and the row fits the block's registers;
  // otherwise two reads per row (the second from cache).
  const bool resident =
      aligned &&
      cols / g <= std::int64_t{kThreads} * (type == FloatType::f32 ? kResident : kResident / 2);
  if (resident) {
    switch (type) {
      case FloatType::f32:
        rowwise_resident_kernel<FloatType::f32>
            <<<grid, kThreads, 0, stream>>>(x, cols, q, scales, divide_only);
        break;
      case FloatType::f16:
        rowwise_resident_kernel<FloatType::f16>
            <<<grid, kThreads, 0, stream>>>(x, cols, q, scales, divide_only);
        break;
      case FloatType::bf16:
        rowwise_resident_kernel<FloatType::bf16>
            <<<grid, kThreads, 0, stream>>>(x, cols, q, scales, divide_only);
        break;
    }
    check_launch("rowwise_resident_kernel");
    return;
  }
  switch (type) {
    case FloatType::f32:
      rowwise_absmax_quantize_kernel<FloatType::f32>
          <<<grid, kThreads, 0, stream>>>(x, cols, q, scales, aligned, divide_only);
      break;
    case FloatType::f16:
      rowwise_absmax_quantize_kernel<FloatType::f16>
          <<<grid, kThreads, 0, stream>>>(x, cols, q, scales, aligned, divide_only);
      break;
    case FloatType::bf16:
      rowwise_absmax_quantize_kernel<FloatType::bf16>
          <<<grid, kThreads, 0, stream>>>(x, cols, q, scales, aligned, divide_only);
      break;
  }
  check_launch("rowwise_absmax_quantize_kernel");
}

}  // namespace qforge::cuda
