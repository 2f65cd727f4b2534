// Bringing matmul operands to the form the GEMM kernels read (gemm.h): int8, K-contiguous,
// rows 16-byte aligned and zero-padded to a multiple of 16, and their row sums for zero-point
// compensation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace qforge::cuda {

// dst[r, c] for r < rows, c < dst_ld: element (r, c) of src when c < cols, else 0. Element
// (r, c) of src is src[r * src_ld + c], or src[c * src_ld + r] when `transposed` (a kn B read
// as [N, K]). flip_sign XORs 0x80 into each byte: uint8 u becomes the int8 u - 128.
void launch_to_s8_operand(const std::uint8_t* src, bool transposed, std::int64_t rows,
                          std::int64_t cols, std::int64_t src_ld, bool flip_sign,
                          std::int8_t* dst, std::int64_t dst_ld, cudaStream_t stream);

// sums[r] = sum over c < ld of m[r * ld + c] (ld a multiple of 16, m 16-byte aligned).
void launch_row_sums(const std::int8_t* m, std::int64_t rows, std::int64_t ld, std::int32_t* sums,
                     cudaStream_t stream);

}  // namespace qforge::cuda
