#include "kernels/elementwise.cuh"
#include "kernels/numerics.cuh"
#include "kernels/rowwise.h"
#include "check.h"

namespace qforge::cuda {
namespace {

constexpr int kThreads = 256;
using dev::kVec;

template <FloatType T>
__global__ void __launch_bounds__(kThreads)
rowwise_absmax_quantize_kernel(const void* __restrict__ x, std::int64_t cols,
                               std::int8_t* __restrict__ q, float* __restrict__ scales,
                               bool aligned) {
  __shared__ float warp_max[kThreads / 32];
  __shared__ float row_scale;
  const std::int64_t row = blockIdx.x;
  const std::int64_t base = row * cols;
  const std::int64_t groups = (cols + kVec - 1) / kVec;

  float amax = 0.0f;
  for (std::int64_t g = threadIdx.x; g < groups; g += kThreads) {
    const std::int64_t c0 = g * kVec;
    if (aligned && c0 + kVec <= cols) {
      float v[kVec];
      dev::load_float_vec<T>(x, base + c0, v);
#pragma unroll
      for (int e = 0; e < kVec; ++e) amax = fmaxf(amax, fabsf(v[e]));  // fmaxf drops NaN
    } else {
      for (std::int64_t c = c0; c < cols && c < c0 + kVec; ++c)
        amax = fmaxf(amax, fabsf(dev::load_float<T>(x, base + c)));
    }
  }
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

  for (std::int64_t g = threadIdx.x; g < groups; g += kThreads) {
    const std::int64_t c0 = g * kVec;
    if (aligned && c0 + kVec <= cols) {
      float v[kVec];
      dev::load_float_vec<T>(x, base + c0, v);
      std::uint32_t w[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        w[j] = 0;
#pragma unroll
        for (int e = 0; e < 4; ++e)
          w[j] |= (static_cast<std::uint32_t>(dev::quantize_value(v[4 * j + e], s, 0, -127, 127)) & 0xFFu)
                  << (8 * e);
      }
      *reinterpret_cast<uint4*>(q + base + c0) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
      for (std::int64_t c = c0; c < cols && c < c0 + kVec; ++c)
        q[base + c] = static_cast<std::int8_t>(
            dev::quantize_value(dev::load_float<T>(x, base + c), s, 0, -127, 127));
    }
  }
}

}  // namespace

void launch_rowwise_absmax_quantize(FloatType type, const void* x, std::int64_t rows,
                                    std::int64_t cols, std::int8_t* q, float* scales,
                                    cudaStream_t stream) {
  if (rows <= 0) return;
  // Vector accesses need every row start 16-byte aligned on both sides.
  const auto in_row_bytes = cols * size_of(type);
  const bool aligned = (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0 &&
                       (reinterpret_cast<std::uintptr_t>(q) & 15u) == 0 && in_row_bytes % 16 == 0 &&
                       cols % 16 == 0;
  const auto grid = static_cast<unsigned>(rows);
  switch (type) {
    case FloatType::f32: rowwise_absmax_quantize_kernel<FloatType::f32><<<grid, kThreads, 0, stream>>>(x, cols, q, scales, aligned); break;
    case FloatType::f16: rowwise_absmax_quantize_kernel<FloatType::f16><<<grid, kThreads, 0, stream>>>(x, cols, q, scales, aligned); break;
    case FloatType::bf16: rowwise_absmax_quantize_kernel<FloatType::bf16><<<grid, kThreads, 0, stream>>>(x, cols, q, scales, aligned); break;
  }
  check_launch("rowwise_absmax_quantize_kernel");
}

}  // namespace qforge::cuda
