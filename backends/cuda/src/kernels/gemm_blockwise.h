// The block-wise weight GEMM: B [N, K] (nk) with one (scale, zero point) pair per block of
// `block` codes along K, int4/uint4 (two codes per byte, unpacked in registers) or int8; A int8
// (uint8 and 4-bit A are brought to int8 by gemm_prep first) per tensor or per row.
//
// Every block's partial sum C_j = sum_{k in j} (A'[m,k] - za'[m]) (B[n,k] - zb[n,j]) is an exact
// integer: the tensor cores (mma.sync m16n8k32 s8, 32 codes of K per instruction) sum the raw
// product, 4-bit codes are centred (b - zb fits int8) while they are unpacked, and the zero
// point of A is removed with per-block column sums of the centred B; for 8-bit B (whose b - zb
// may not fit int8) the zero point of B is removed with per-block row sums of A. Then
//   matmul_dequant:  acc = fma(float(C_j), sb[n, j], acc) over the blocks, y = acc * sa[m] (+
//   bias[n]) matmul_integer:  C = sum_j C_j, exact in wrap-around int32 (K <= the int32-safe bound)
// docs/CUDA.md ("Block-wise B") gives the exactness argument and the limits on the block size.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/gemm.h"
#include "qforge/half.h"

namespace qforge::cuda {

// B as the block-wise kernels read it, with what its zero points need.
struct BlockwiseB {
  const std::uint8_t* codes = nullptr;  // [n, ld] bytes: int8 (uint8 flipped) or packed 4-bit
  std::int64_t ld = 0;                  // bytes per row, a multiple of 16; codes past K are
                                        // neutral (8-bit: 0; 4-bit: the block's zero point)
  int bits = 4;                         // 4 or 8
  bool is_signed = true;                // 4-bit: int4 (sign-extended) or uint4
  std::int64_t block = 32;              // block size along K: 16 or a multiple of 32
  std::int64_t blocks = 0;              // ceil(K / block)
  const float* scales = nullptr;        // [n, blocks]
  // 4-bit: the zero point of each block (raw codes), or zero_point0 everywhere when null.
  // 8-bit: raw zero points too; only the preparation pass reads them (neg_zero_points).
  const std::int32_t* zero_points = nullptr;
  std::int32_t zero_point0 = 0;
  std::int32_t shift = 0;           // 8-bit: zb' = zb - shift (128 for uint8)
  const float* col_sums = nullptr;  // [n, blocks] sum over the block (k < K) of the
                                    // centred B (4-bit: b - zb, 8-bit: b' - zb'), exact
  const std::int32_t* col_sums_total = nullptr;  // [n] the sum of a row's col_sums
  const float* neg_zero_points = nullptr;        // [n, blocks] 8-bit affine B only: -zb'
};

struct BlockwiseGemm {
  const std::int8_t* a = nullptr;  // A' [m, lda] int8, lda a multiple of 16, zero past K
  std::int64_t lda = 0;
  BlockwiseB b;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t groups = 0;          // ceil(K / 32): 32-code steps of the tensor cores
  FloatVec sa;                      // per row or per tensor
  IntVec za;                        // za' (A's zero point in the int8 domain)
  bool a_zero_points = false;       // some za' != 0: C_j needs b.col_sums
  const float* row_sums = nullptr;  // [m, blocks] per-block sums of A' (8-bit affine B)
  int groups_per_split = 0;         // K range of one CTA (whole blocks, an even count)
  // matmul_integer: the int32 result goes through `ep` (int32_out, or accumulate for split-K,
  // which launch_blockwise_gemm finishes); its zero-point compensation uses b.col_sums_total.
  bool int_out = false;
  Epilogue ep;
  // matmul_dequant: y = acc * sa (+ bias) as out_type, row-major with leading dimension ldc.
  void* out = nullptr;
  std::int64_t ldc = 0;
  FloatType out_type = FloatType::f32;
  const float* bias = nullptr;
  bool paired = false;  // out and ldc allow one aligned store per column pair
  // Float split-K: per-split partial sums [splits, m, n] and one counter per output tile (zero
  // before the launch; the kernel leaves them zero), so that the last CTA of a tile adds the
  // partials in split order: deterministic, no second launch.
  float* partials = nullptr;
  int* counters = nullptr;
};

// The largest block size the kernels take for `bits`-bit B (every per-block value then stays
// an exact integer below 2^24 in float32, and a raw block sum below 2^22; gemm_blockwise.cu).
constexpr std::int64_t blockwise_max_block(int bits) { return bits == 4 ? 256 : 128; }
constexpr bool blockwise_block_ok(std::int64_t block, int bits) {
  return (block == 16 || (block % 32 == 0 && block > 0)) && block <= blockwise_max_block(bits);
}

// Output tile of a kernel variant, and the split of K for a shape on `multiprocessors` SMs:
// returns groups_per_split (== groups: no split).
int blockwise_tile_m(GemmKernel kernel);
int blockwise_tile_n(GemmKernel kernel);
int blockwise_groups_per_split(GemmKernel kernel, std::int64_t m, std::int64_t n,
                               std::int64_t groups, std::int64_t block, int multiprocessors);

// The CUDA-core GEMV for block-wise B (gemm_blockwise_gemv.cu): matmul_dequant (float out) with
// 4-bit B in blocks of a multiple of 32 and at most kBlockwiseGemvMaxM rows of A.
constexpr std::int64_t kBlockwiseGemvMaxM = 4;
constexpr bool blockwise_gemv_ok(bool float_out, std::int64_t m, int bits, std::int64_t block) {
  return float_out && m <= kBlockwiseGemvMaxM && bits == 4 && block >= 32 && block % 32 == 0;
}
void launch_blockwise_gemv(const BlockwiseGemm& p, cudaStream_t stream);

// Runs the GEMM. For int_out with groups_per_split < groups, `int_workspace` ([m, n] int32)
// takes the raw split sums and a second pass applies p.ep; float split-K needs p.partials and
// p.counters ([tiles] ints, zero).
void launch_blockwise_gemm(GemmKernel kernel, const BlockwiseGemm& p, std::int32_t* int_workspace,
                           int device, cudaStream_t stream);

// ---- preparation passes (blockwise_prep.cu) ----
// Packed 4-bit rows of length k (element n*k + kk of src, the layout core packs an [N, K] tensor
// in) into [n, ld] bytes, codes past k set to the zero point of the row's last block.
void launch_repack_4bit(const std::uint8_t* src, std::int64_t n, std::int64_t k,
                        const BlockwiseB& b, std::uint8_t* dst, std::int64_t ld,
                        cudaStream_t stream);
// b.col_sums, b.col_sums_total and (8-bit with zero points) b.neg_zero_points from b.codes and
// the zero points; null outputs are skipped.
void launch_blockwise_b_sums(const BlockwiseB& b, std::int64_t n, std::int64_t k, float* col_sums,
                             std::int32_t* col_sums_total, float* neg_zero_points,
                             cudaStream_t stream);
// sums[m, j] = sum over block j (k < K) of a[m, k], as float (exact).
void launch_block_row_sums(const std::int8_t* a, std::int64_t m, std::int64_t lda, std::int64_t k,
                           std::int64_t block, std::int64_t blocks, float* sums,
                           cudaStream_t stream);

}  // namespace qforge::cuda
