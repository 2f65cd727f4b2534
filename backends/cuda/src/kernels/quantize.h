// Element-wise quantize and dequantize of a whole tensor, bit-exact with reference::quantize /
// reference::dequantize for int8/uint8/int16/uint16/int4/uint4 and every granularity. Inputs of
// quantize may be float32, float16 or bfloat16 (widened exactly before the division).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "qforge/dtype.h"
#include "qforge/half.h"

namespace qforge::cuda {

enum class ParamLayout : int { per_tensor = 0, per_channel = 1, block = 2 };

// Which (scale, zero point) pair element i of the flat tensor uses.
//   per_tensor:  pair 0 (scales/zero_points may be null: scale0/zero_point0 are used)
//   per_channel: pair (i / inner) % extent         (inner = product of the dims after the axis)
//   block:       pair (i / inner) * extent + (i % inner) / block
//                (inner = last-axis length, extent = blocks per row)
struct PairIndexing {
  ParamLayout layout = ParamLayout::per_tensor;
  std::int64_t inner = 1;
  std::int64_t extent = 1;
  std::int64_t block = 1;
  const float* scales = nullptr;              // device
  const std::int32_t* zero_points = nullptr;  // device
  float scale0 = 1.0f;
  std::int32_t zero_point0 = 0;
  std::int32_t qmin = 0, qmax = 0;
  bool divide_only = false;  // set by launch_quantize from QFORGE_CUDA_QUANTIZE_DIVIDE
};

// QFORGE_CUDA_QUANTIZE_DIVIDE=1: the quantize kernels divide for every element instead of
// taking the reciprocal fast path (same results; for measuring one against the other).
bool quantize_divide_only();

// x: n elements of `in` (device); q: storage_bytes(out, n) bytes (device).
void launch_quantize(FloatType in, const void* x, DType out, void* q, std::int64_t n,
                     const PairIndexing& p, cudaStream_t stream);
// q: packed `in` codes (device); x: n float32 (device).
void launch_dequantize(DType in, const void* q, float* x, std::int64_t n, const PairIndexing& p,
                       cudaStream_t stream);

}  // namespace qforge::cuda
