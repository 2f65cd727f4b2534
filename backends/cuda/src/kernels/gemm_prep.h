// Bringing matmul operands to the form the GEMM kernels read (gemm.h): int8, K-contiguous,
// rows 16-byte aligned and zero-padded to a multiple of 16, and their row sums for zero-point
// compensation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace qforge::cuda {

// How the source codes are stored: 8-bit (uint8 values flipped to int8 by XOR 0x80, i.e.
// u - 128) or packed 4-bit (two per byte, element 2i in the low nibble; int4 sign-extended,
// uint4 kept as 0..15, both exact in int8).
struct SourceCodes {
  int bits = 8;            // 8 or 4
  bool flip_sign = false;  // 8-bit only: uint8 -> int8
  bool is_signed = true;   // 4-bit only: int4 vs uint4
};

// dst[r, c] for r < rows, c < dst_ld: element (r, c) of src when c < cols, else 0. Element
// (r, c) of src is element r * src_ld + c, or c * src_ld + r when `transposed` (a kn B read
// as [N, K]).
void launch_to_s8_operand(const std::uint8_t* src, SourceCodes codes, bool transposed,
                          std::int64_t rows, std::int64_t cols, std::int64_t src_ld,
                          std::int8_t* dst, std::int64_t dst_ld, cudaStream_t stream);

// sums[r] = sum over c < ld of m[r * ld + c] (ld a multiple of 16, m 16-byte aligned).
void launch_row_sums(const std::int8_t* m, std::int64_t rows, std::int64_t ld, std::int32_t* sums,
                     cudaStream_t stream);

}  // namespace qforge::cuda
