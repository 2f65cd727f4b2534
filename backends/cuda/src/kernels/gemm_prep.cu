// Operand preparation for the GEMM kernels: sign flip, transpose, zero padding, row sums.
// These passes run only when an operand is not already int8, K-contiguous and 16-byte aligned
// with a K that is a multiple of 16; packed weights run them once.
#include "check.h"
#include "kernels/gemm_prep.h"

namespace qforge::cuda {
namespace {

constexpr int kTile = 32;

// Element i of the source as the int8 byte the GEMM kernels read.
__device__ __forceinline__ std::uint32_t source_code(const std::uint8_t* src, std::int64_t i,
                                                     SourceCodes codes) {
  if (codes.bits == 8) return static_cast<std::uint32_t>(src[i]) ^ (codes.flip_sign ? 0x80u : 0u);
  const std::uint32_t byte = src[i / 2];
  const std::uint32_t nib = (i & 1) ? (byte >> 4) : (byte & 0xFu);
  const std::int32_t v =
      codes.is_signed ? static_cast<std::int32_t>(nib ^ 8u) - 8 : static_cast<std::int32_t>(nib);
  return static_cast<std::uint32_t>(v) & 0xFFu;
}

// Plain copy with padding: one thread per 4 output bytes.
__global__ void __launch_bounds__(256)
    copy_operand_kernel(const std::uint8_t* __restrict__ src, std::int64_t rows, std::int64_t cols,
                        std::int64_t src_ld, SourceCodes codes, std::int8_t* __restrict__ dst,
                        std::int64_t dst_ld) {
  const std::int64_t words_per_row = dst_ld / 4;
  const std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (w >= words_per_row * rows) return;
  const std::int64_t r = w / words_per_row;
  const std::int64_t c0 = (w % words_per_row) * 4;
  std::uint32_t word = 0;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const std::int64_t c = c0 + e;
    if (c < cols) word |= source_code(src, r * src_ld + c, codes) << (8 * e);
  }
  reinterpret_cast<std::uint32_t*>(dst + r * dst_ld)[c0 / 4] = word;
}

// Transpose through shared memory: reads rows of src (the c index, K) coalesced along r (N),
// writes rows of dst coalesced along c.
__global__ void __launch_bounds__(kTile * 8)
    transpose_operand_kernel(const std::uint8_t* __restrict__ src, std::int64_t rows,
                             std::int64_t cols, std::int64_t src_ld, SourceCodes codes,
                             std::int8_t* __restrict__ dst, std::int64_t dst_ld) {
  __shared__ std::uint8_t tile[kTile][kTile + 4];
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * kTile;  // dst rows (N)
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.y) * kTile;  // dst cols (K)
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (int i = ty; i < kTile; i += 8) {
    const std::int64_t c = c0 + i, r = r0 + tx;
    tile[i][tx] = (c < cols && r < rows)
                      ? static_cast<std::uint8_t>(source_code(src, c * src_ld + r, codes))
                      : 0;
  }
  __syncthreads();
  for (int i = ty; i < kTile; i += 8) {
    const std::int64_t r = r0 + i, c = c0 + tx;
    if (r < rows && c < dst_ld) dst[r * dst_ld + c] = static_cast<std::int8_t>(tile[tx][i]);
  }
}

// One warp per row, 16 bytes per lane per step, __dp4a against 0x01010101 sums 4 signed bytes.
__global__ void __launch_bounds__(256)
    row_sums_kernel(const std::int8_t* __restrict__ m, std::int64_t rows, std::int64_t ld,
                    std::int32_t* __restrict__ sums) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int4* p = reinterpret_cast<const int4*>(m + row * ld);
  int acc = 0;
  for (std::int64_t i = lane; i < ld / 16; i += 32) {
    const int4 v = p[i];
    acc = __dp4a(v.x, 0x01010101, acc);
    acc = __dp4a(v.y, 0x01010101, acc);
    acc = __dp4a(v.z, 0x01010101, acc);
    acc = __dp4a(v.w, 0x01010101, acc);
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xFFFFFFFFu, acc, o);
  if (lane == 0) sums[row] = acc;
}

}  // namespace

void launch_to_s8_operand(const std::uint8_t* src, SourceCodes codes, bool transposed,
                          std::int64_t rows, std::int64_t cols, std::int64_t src_ld,
                          std::int8_t* dst, std::int64_t dst_ld, cudaStream_t stream) {
  if (rows <= 0 || dst_ld <= 0) return;
  if (transposed) {
    const dim3 grid(static_cast<unsigned>((rows + kTile - 1) / kTile),
                    static_cast<unsigned>((dst_ld + kTile - 1) / kTile));
    transpose_operand_kernel<<<grid, kTile * 8, 0, stream>>>(src, rows, cols, src_ld, codes, dst,
                                                             dst_ld);
    check_launch("transpose_operand_kernel");
  } else {
    const std::int64_t words = rows * (dst_ld / 4);
    copy_operand_kernel<<<static_cast<unsigned>((words + 255) / 256), 256, 0, stream>>>(
        src, rows, cols, src_ld, codes, dst, dst_ld);
    check_launch("copy_operand_kernel");
  }
}

void launch_row_sums(const std::int8_t* m, std::int64_t rows, std::int64_t ld, std::int32_t* sums,
                     cudaStream_t stream) {
  if (rows <= 0) return;
  row_sums_kernel<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(m, rows, ld, sums);
  check_launch("row_sums_kernel");
}

}  // namespace qforge::cuda
