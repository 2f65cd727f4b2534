// int8 GEMM with exact int32 accumulation and fused epilogues.
//
// Every kernel computes C'[m, n] = sum_k A'[m, k] * B'[n, k] over int8 operands A' [M, kp] and
// B' [N, kp] (both K-contiguous, the mma.sync "row.col" layout, rows 16-byte aligned, zero past
// the true depth k). Other operands are brought to this form first (gemm_prep.h): uint8 values
// become int8 by flipping the top bit (a - 128) with their zero point lowered by 128, a kn B is
// transposed, a K that is not a multiple of 16 is padded. The epilogue then restores the exact
//   C[m, n] = sum_k (A'[m,k] - za'[m]) (B'[n,k] - zb'[n])
//           = C'[m, n] - zb'[n] rowsum(A')[m] - za'[m] colsum(B')[n] + k za'[m] zb'[n]
// in wrap-around int32 arithmetic: every term is exact modulo 2^32, and the result is exact
// whenever it fits int32, which k <= reference::int32_safe_k guarantees. The raw C' itself never
// leaves int32 there: |A'|, |B'| <= 128 and every 8-bit zero point leaves some |q - z| >= 128.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "qforge/half.h"

namespace qforge::cuda {

struct GemmOperands {
  const std::int8_t* a = nullptr;  // [m, lda]
  const std::int8_t* b = nullptr;  // [n, ldb]
  std::int64_t m = 0, n = 0;
  std::int64_t k = 0;             // true depth: the epilogue's k * za' * zb' term
  std::int64_t kp = 0;            // depth the kernels run over: k rounded up to a multiple of 16
  std::int64_t lda = 0, ldb = 0;  // multiples of 16
  // Start each tile's K loop at a different K tile (integer sums do not depend on the order),
  // so that CTAs running in lock-step do not all read the same column band of A and B.
  bool k_rotate = false;
};

// A per-row / per-column value: ptr[i * stride] when ptr is set (stride 0: one value in device
// memory), otherwise `value`.
struct IntVec {
  const std::int32_t* ptr = nullptr;
  std::int32_t value = 0;
  int stride = 1;
};
struct FloatVec {
  const float* ptr = nullptr;
  float value = 1.0f;
  int stride = 1;
};

enum class EpilogueKind : int {
  int32_out,   // matmul_integer: C
  float_out,   // matmul_dequant: ((float(C) * sa[m]) * sb[n]) + bias[n] as float32/16/bf16
  requantize,  // qlinear_matmul: requantize_value(C, (sa[m] * sb[n]) / sy, mode, zy)
  accumulate,  // split-K partial: atomically add C' (raw, uncompensated) into int32 `out`
};

// The common epilogues without zero-point compensation, with paired stores: these run inline
// in the kernels; everything else goes through one out-of-line function (epilogue.cuh), which
// keeps the unrolled epilogue of a tile small enough for the instruction cache.
enum class FastPath : int { none, i32, acc, f32, f16, bf16 };

struct Epilogue {
  EpilogueKind kind = EpilogueKind::int32_out;
  FastPath fast = FastPath::none;  // set by launch_gemm / launch_epilogue (fast_path_of)
  void* out = nullptr;
  std::int64_t ldc = 0;
  std::int64_t m = 0, n = 0, k = 0;
  bool paired = false;  // out and ldc allow one aligned store for columns (n, n + 1), n even
  // zero-point compensation; a null sum means the matching zero points are all 0
  const std::int32_t* a_rowsum = nullptr;
  const std::int32_t* b_colsum = nullptr;
  IntVec za, zb;  // za'[m], zb'[n]
  // float_out / requantize
  FloatVec sa, sb;
  const float* bias = nullptr;
  FloatType out_type = FloatType::f32;
  // requantize
  float sy = 1.0f;
  std::int32_t zy = 0, qmin = -128, qmax = 127;
  bool fixed_point = false;
};

// The inline path an epilogue may take (FastPath::none: the general one).
FastPath fast_path_of(const Epilogue& ep);

// The kernel variants. Names (kernel_names.cpp) carry op, dtypes, instruction and tile.
enum class GemmKernel : int {
  mma_128x256,    // mma.sync m16n8k32, 128x256x64 tile, 8 warps of 64x64, 4 stages
  mma_128x128,    // 128x128x64, 4 warps of 64x64, 4 stages
  mma_32x128,     // 32x128x64, 4 warps of 32x32, 6 stages, split-K: skinny M (GEMV-like)
  dp4a_128x128,   // __dp4a SIMT, 128x128x32 tile, 8x8 per thread
  wgmma_128x256,  // Hopper wgmma m64n256k32 + TMA, 2 consumer warpgroups, persistent (sm_90a)
  // Block-wise B (gemm_blockwise.h): mma.sync m16n8k32 with 4-bit B unpacked in registers.
  qbw_128x128,  // 128x128x64 tile, 8 warps of 64x32, 4 stages, split-K for few tiles
  qbw_16x128,   // 16x128x64 tile, 4 warps of 16x32, 4 stages, split-K: M <= 8 (GEMV)
  qbw_gemv,     // CUDA cores (__dp4a), one warp per column, 4-bit B, float out, M <= 4
  // Skinny M (gemm_skinny.cu): B streamed from global memory straight into mma fragments, K
  // split over a CTA's 8 warps and reduced in shared memory; 32 columns x 32 rows per CTA.
  mma_skinny,
};

struct GemmLaunch {
  GemmKernel kernel = GemmKernel::mma_128x128;
  int splits = 1;                     // split-K factor (> 1 needs `workspace`)
  std::int32_t* workspace = nullptr;  // split-K partial sums (split_workspace().ints of them)
  int* counters = nullptr;            // split-K tile counters, zeroed (split_workspace().counters)
  int device = 0;
};

// Runs C' and the epilogue. Nothing to do for m == 0 or n == 0.
void launch_gemm(const GemmLaunch& how, const GemmOperands& op, const Epilogue& ep,
                 cudaStream_t stream);

// What a split-K launch needs: `ints` int32 of workspace and `counters` ints that start at zero
// (wgmma: a partial tile per work item and a counter per tile, the kernel reduces; the others:
// the [m, n] sums that an epilogue pass reads, no counters).
struct SplitWorkspace {
  std::int64_t ints = 0, counters = 0;
};
SplitWorkspace split_workspace(GemmKernel kernel, std::int64_t m, std::int64_t n, int splits);

// The split-K factor worth using for this shape on `multiprocessors` SMs (1 = none).
int choose_splits(GemmKernel kernel, std::int64_t m, std::int64_t n, std::int64_t kp,
                  int multiprocessors);

}  // namespace qforge::cuda
