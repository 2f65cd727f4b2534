// matmul_weight_only on cpu_x86: float32 A times int4/uint4/int8/uint8 B, float32 Y (ONNX
// Runtime's MatMulNBits; docs/NUMERICS.md "Weight-only matmul").
//
// B is repacked once (a plan's fixed weights, or per call) into panels of 16 columns: for each
// panel and each k, the 16 codes as unsigned bytes (8 bytes of two nibbles for 4-bit types:
// column i in the low nibble and column i + 8 in the high one, so that one AND and one shift
// separate them), and per panel and group of K (a block, or all of K for per-tensor and
// per-column params) 16 scales and 16 zero points as floats, the zero points moved by the same
// offset as the codes. The kernel dequantizes a chunk of K of a few panels into a float panel
// exactly as the reference does ((q - z) converted to float, times s: float(u) - float(z') is
// the same exact integer), then runs a 6x16 FMA tile over the rows. Every output is summed by
// one task in ascending k, so results do not depend on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "qforge/op_desc.h"

namespace qforge::cpu_x86 {

class ThreadPool;

inline constexpr std::int64_t kWeightOnlyPanel = 16;  // columns per panel

struct WeightOnlyWeights {
  // Packs B (desc.b_shape() codes of desc.b.dtype(), desc.b_layout) once.
  WeightOnlyWeights(const MatmulDesc& desc, const void* b);

  std::int64_t n = 0, k = 0;
  std::int64_t panels = 0;          // ceil(n / 16)
  std::int64_t group = 1;           // K per (scale, zero point) group: the block size, or k
  std::int64_t groups = 0;          // ceil(k / group)
  bool four_bit = false;            // 8 bytes per (panel, k), else 16
  std::vector<std::uint8_t> codes;  // [panels][k][8 or 16]
  std::vector<float> scales;        // [panels][groups][16]
  std::vector<float> zeros;         // [panels][groups][16], offset like the codes

  std::size_t bytes() const noexcept {
    return codes.size() + (scales.size() + zeros.size()) * sizeof(float);
  }
};

// Y[M, N] = A[M, K] deq(B) + bias, A row-major with K columns, Y row-major with N columns.
void run_weight_only(ThreadPool& pool, std::int64_t m, const float* a, const WeightOnlyWeights& w,
                     const float* bias, float* y);

// The AVX2 parts (weight_only_avx2.cpp).
// Dequantizes columns [16 p, 16 p + 16) of rows [k0, k1) of B into dst[(k1 - k0)][16].
void weight_only_decode_avx2(const WeightOnlyWeights& w, std::int64_t p, std::int64_t k0,
                             std::int64_t k1, float* dst);
// Y[rows, cols] (+)= A[rows, kc] W[kc, 16] for rows <= 6, cols <= 16: starts from Y when
// `accumulate`, adds bias[cols] at the end when bias is not null.
void weight_only_tile_avx2(int rows, int cols, const float* a, std::int64_t lda, const float* w,
                           std::int64_t kc, float* y, std::int64_t ldy, bool accumulate,
                           const float* bias);

}  // namespace qforge::cpu_x86
