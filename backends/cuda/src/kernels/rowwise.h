// The Triton seed's fused "compute scale and quantize" per row: for X [rows, cols],
//   s[r] = max(max_c |X[r, c]| / 127, 1e-8)          (float32; NaN elements do not count)
//   Q[r, c] = quantize_value(X[r, c], s[r], 0, -127, 127)   (int8 symmetric, narrow range)
// in one launch that reads each row once from device memory (the second read of a row, for the
// quantization, comes from cache). The QuantizationOps interface has no op for per-row dynamic
// quantization yet; this kernel serves the benchmarks and the white-box tests, and is the
// building block for one (docs/CUDA.md).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "qforge/half.h"

namespace qforge::cuda {

void launch_rowwise_absmax_quantize(FloatType type, const void* x, std::int64_t rows,
                                    std::int64_t cols, std::int8_t* q, float* scales,
                                    cudaStream_t stream);

}  // namespace qforge::cuda
