// Preparation passes of the block-wise GEMM (gemm_blockwise.h): 4-bit B rows padded to whole
// 32-code groups, per-block column sums of the centred B (and -zb' for 8-bit B), per-block row
// sums of A. They run only when the shape or the zero points need them; packed weights run the
// B passes once.
#include "check.h"
#include "kernels/gemm_blockwise.h"

namespace qforge::cuda {
namespace {

// The value of a 4-bit code (int4 sign-extended, uint4 as is).
__device__ __forceinline__ std::int32_t nibble_value(std::uint32_t nib, bool is_signed) {
  return is_signed ? static_cast<std::int32_t>(nib ^ 8u) - 8 : static_cast<std::int32_t>(nib);
}

__device__ __forceinline__ std::int32_t zero_point_of(const BlockwiseB& b, std::int64_t n,
                                                      std::int64_t j) {
  return b.zero_points ? b.zero_points[n * b.blocks + j] : b.zero_point0;
}

// One thread per output byte: codes 2c and 2c + 1 of row r.
__global__ void __launch_bounds__(256)
    repack_4bit_kernel(const std::uint8_t* __restrict__ src, std::int64_t rows, std::int64_t k,
                       BlockwiseB b, std::uint8_t* __restrict__ dst, std::int64_t ld) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * ld) return;
  const std::int64_t r = i / ld, c = i % ld;
  // Past K: the zero point of the row's last block, so that the centred code is 0.
  const std::uint32_t pad = static_cast<std::uint32_t>(zero_point_of(b, r, b.blocks - 1)) & 0xFu;
  std::uint32_t byte = 0;
  for (int h = 0; h < 2; ++h) {
    const std::int64_t kk = 2 * c + h;
    std::uint32_t nib = pad;
    if (kk < k) {
      const std::int64_t e = r * k + kk;
      const std::uint32_t v = src[e / 2];
      nib = (e & 1) ? (v >> 4) : (v & 0xFu);
    }
    byte |= nib << (4 * h);
  }
  dst[i] = static_cast<std::uint8_t>(byte);
}

// One warp per row of B; lanes take blocks. Exact integer sums (|sum| <= 256 * 255).
__global__ void __launch_bounds__(256)
    blockwise_b_sums_kernel(BlockwiseB b, std::int64_t rows, std::int64_t k,
                            float* __restrict__ col_sums, std::int32_t* __restrict__ col_sums_total,
                            float* __restrict__ neg_zero_points) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const std::uint8_t* row = b.codes + r * b.ld;
  std::int32_t total = 0;
  for (std::int64_t j = lane; j < b.blocks; j += 32) {
    const std::int64_t k0 = j * b.block, k1 = min(k, k0 + b.block);
    const std::int32_t zb = zero_point_of(b, r, j) - (b.bits == 8 ? b.shift : 0);
    std::int32_t sum = 0;
    for (std::int64_t kk = k0; kk < k1; ++kk) {
      const std::int32_t v =
          b.bits == 8 ? static_cast<std::int32_t>(static_cast<std::int8_t>(row[kk]))
                      : nibble_value((row[kk / 2] >> (4 * (kk & 1))) & 0xFu, b.is_signed);
      sum += v - zb;
    }
    total += sum;
    if (col_sums) col_sums[r * b.blocks + j] = static_cast<float>(sum);
    if (neg_zero_points) neg_zero_points[r * b.blocks + j] = static_cast<float>(-zb);
  }
  for (int o = 16; o > 0; o >>= 1) total += __shfl_down_sync(0xFFFFFFFFu, total, o);
  if (lane == 0 && col_sums_total) col_sums_total[r] = total;
}

// One thread per (row, block).
__global__ void __launch_bounds__(256)
    block_row_sums_kernel(const std::int8_t* __restrict__ a, std::int64_t rows, std::int64_t lda,
                          std::int64_t k, std::int64_t block, std::int64_t blocks,
                          float* __restrict__ sums) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * blocks) return;
  const std::int64_t r = i / blocks, j = i % blocks;
  const std::int64_t k0 = j * block, k1 = min(k, k0 + block);
  std::int32_t sum = 0;
  for (std::int64_t kk = k0; kk < k1; ++kk) sum += a[r * lda + kk];
  sums[i] = static_cast<float>(sum);
}

unsigned grid_for(std::int64_t threads) { return static_cast<unsigned>((threads + 255) / 256); }

}  // namespace

void launch_repack_4bit(const std::uint8_t* src, std::int64_t n, std::int64_t k,
                        const BlockwiseB& b, std::uint8_t* dst, std::int64_t ld,
                        cudaStream_t stream) {
  if (n <= 0 || ld <= 0) return;
  repack_4bit_kernel<<<grid_for(n * ld), 256, 0, stream>>>(src, n, k, b, dst, ld);
  check_launch("repack_4bit_kernel");
}

void launch_blockwise_b_sums(const BlockwiseB& b, std::int64_t n, std::int64_t k, float* col_sums,
                             std::int32_t* col_sums_total, float* neg_zero_points,
                             cudaStream_t stream) {
  if (n <= 0) return;
  blockwise_b_sums_kernel<<<static_cast<unsigned>((n + 7) / 8), 256, 0, stream>>>(
      b, n, k, col_sums, col_sums_total, neg_zero_points);
  check_launch("blockwise_b_sums_kernel");
}

void launch_block_row_sums(const std::int8_t* a, std::int64_t m, std::int64_t lda, std::int64_t k,
                           std::int64_t block, std::int64_t blocks, float* sums,
                           cudaStream_t stream) {
  if (m <= 0 || blocks <= 0) return;
  block_row_sums_kernel<<<grid_for(m * blocks), 256, 0, stream>>>(a, m, lda, k, block, blocks,
                                                                  sums);
  check_launch("block_row_sums_kernel");
}

}  // namespace qforge::cuda
