// Block-wise 4-bit B times a few rows of A (M <= 4): the weight-only GEMV of decoding, where
// the work is streaming B once. The tensor-core kernels (gemm_blockwise.cu) fill m16 tiles with
// 15 rows of zeros here and stage B through shared memory; this one keeps B in registers and
// multiplies on the CUDA cores with __dp4a (a GEMV needs 2 operations per B byte, far below
// the dp4a rate), so its speed is that of its loads.
//
// One warp owns one row n of B (one output column; from M = 3 on two, which share each load of
// A). Lane l takes the 32-code pieces l, l + 32, ... of the row: 16 bytes of codes, coalesced
// across the warp, the piece's scale (and zero point), and the 32 matching bytes of each row of
// A (L1-resident: every warp reads the same A).
// For a piece with codes u (4-bit, int4 flipped to offset binary so that 0 <= u <= 15, its zero
// point moved the same way to z) and A bytes a (A' = A - za per row, za' in the int8 domain):
//   C = sum (a - za)(u - z) = dot(u, a) - z * sum(a) - za * (sum(u) - 32 z)
// exactly in int32 (|C| < 2^24: 32 codes of at most 15 times 255); codes past K are the block's
// zero point and A is zero past K, so they add nothing. Then acc = fma(float(C), s[n, j], acc)
// per piece, the warp adds its lanes' acc (a tree), and lane 0 writes acc * sa (+ bias) as the
// output type: the float order differs from the reference's block by block sum, within the
// matmul_dequant tolerance (docs/NUMERICS.md). The two nibbles of a byte hold codes 2i and
// 2i + 1, so a word's low nibbles pair with A's even bytes and its high nibbles with the odd
// ones (one byte permute each).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "check.h"
#include "kernels/epilogue.cuh"
#include "kernels/gemm_blockwise.h"

namespace qforge::cuda {
namespace {

constexpr int kWarps = 8;           // rows of B per CTA
constexpr int kPiecesInFlight = 4;  // pieces per lane loaded before any is used

// dot of unsigned bytes a with signed bytes b, plus c.
__device__ __forceinline__ int dp4a_us(unsigned a, int b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

__device__ __forceinline__ void store_output(const BlockwiseGemm& p, std::int64_t m, std::int64_t n,
                                             float v) {
  v = __fmul_rn(v, dev::at(p.sa, m));
  if (p.bias) v = __fadd_rn(v, p.bias[n]);  // only then: adding +0.0 would turn -0.0 into +0.0
  const std::int64_t off = m * p.ldc + n;
  if (p.out_type == FloatType::f32) static_cast<float*>(p.out)[off] = v;
  else if (p.out_type == FloatType::f16) static_cast<__half*>(p.out)[off] = __float2half_rn(v);
  else static_cast<__nv_bfloat16*>(p.out)[off] = __float2bfloat16_rn(v);
}

// C columns per warp share each piece of A (loaded, permuted and summed once for all of them).
template <int M, int C>
__global__ void __launch_bounds__(kWarps * 32)
    qbw_gemv_kernel(const __grid_constant__ BlockwiseGemm p) {
  constexpr int kUnroll = kPiecesInFlight / C;  // pieces per lane and column loaded before use
  const int lane = threadIdx.x % 32;
  const std::int64_t n0 = (static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32) * C;
  if (n0 >= p.n) return;
  const BlockwiseB& b = p.b;
  const int cols = p.n - n0 < C ? static_cast<int>(p.n - n0) : C;
  const std::int64_t pieces = p.groups;                  // 32-code pieces along K
  const int per_block = static_cast<int>(b.block / 32);  // pieces per block (block % 32 == 0)
  const unsigned flip = b.is_signed ? 0x88888888u : 0u;  // int4 -> offset binary
  const int z_shift = b.is_signed ? 8 : 0;
  int za[M];
#pragma unroll
  for (int m = 0; m < M; ++m) za[m] = m < p.m ? dev::at(p.za, m) : 0;
  float acc[M][C];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int q = 0; q < C; ++q) acc[m][q] = 0.0f;

  for (std::int64_t base = lane; base < pieces; base += 32 * kUnroll) {
    uint4 raw[C][kUnroll];
    float scale[C][kUnroll];
    int zero[C][kUnroll];
#pragma unroll
    for (int q = 0; q < C; ++q)
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const std::int64_t c = base + 32 * u;
        // A missing last column reads the first one again (its result is not stored).
        const std::int64_t n = n0 + (q < cols ? q : 0);
        if (c < pieces) {
          raw[q][u] =
              __ldcs(reinterpret_cast<const uint4*>(b.codes + n * b.ld) + c);  // streamed once
          const std::int64_t j = n * b.blocks + c / per_block;
          scale[q][u] = __ldg(b.scales + j);
          zero[q][u] = (b.zero_points ? __ldg(b.zero_points + j) : b.zero_point0) + z_shift;
        }
      }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t c = base + 32 * u;
      if (c >= pieces) break;
      unsigned lo[C][4], hi[C][4];
      int sum_u[C];
#pragma unroll
      for (int q = 0; q < C; ++q) {
        const unsigned w[4] = {raw[q][u].x ^ flip, raw[q][u].y ^ flip, raw[q][u].z ^ flip,
                               raw[q][u].w ^ flip};
        sum_u[q] = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          lo[q][i] = w[i] & 0x0F0F0F0Fu;
          hi[q][i] = (w[i] >> 4) & 0x0F0F0F0Fu;
          sum_u[q] = dp4a_us(lo[q][i] + hi[q][i], 0x01010101,
                             sum_u[q]);  // nibble pairs: at most 30 per byte
        }
      }
      const std::int64_t k0 = c * 32;
#pragma unroll
      for (int m = 0; m < M; ++m) {
        if (m >= p.m) break;
        const std::int8_t* arow = p.a + m * p.lda + k0;
        // A holds lda bytes (a multiple of 16, zero past K): the second half of the last piece
        // may lie past it.
        const uint4 a0 = __ldg(reinterpret_cast<const uint4*>(arow));
        const uint4 a1 = k0 + 16 < p.lda ? __ldg(reinterpret_cast<const uint4*>(arow + 16))
                                         : make_uint4(0, 0, 0, 0);
        const unsigned av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        int even[4], odd[4], sum_a = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          even[i] = static_cast<int>(__byte_perm(av[2 * i], av[2 * i + 1], 0x6420));
          odd[i] = static_cast<int>(__byte_perm(av[2 * i], av[2 * i + 1], 0x7531));
          sum_a = __dp4a(static_cast<int>(av[2 * i]), 0x01010101, sum_a);
          sum_a = __dp4a(static_cast<int>(av[2 * i + 1]), 0x01010101, sum_a);
        }
#pragma unroll
        for (int q = 0; q < C; ++q) {
          int dot = 0;
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            dot = dp4a_us(lo[q][i], even[i], dot);
            dot = dp4a_us(hi[q][i], odd[i], dot);
          }
          const int cc = dot - zero[q][u] * sum_a - za[m] * (sum_u[q] - 32 * zero[q][u]);
          acc[m][q] = __fmaf_rn(static_cast<float>(cc), scale[q][u], acc[m][q]);
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int q = 0; q < C; ++q) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
        acc[m][q] = __fadd_rn(acc[m][q], __shfl_xor_sync(0xFFFFFFFFu, acc[m][q], o));
      if (lane == 0 && m < p.m && q < cols) store_output(p, m, n0 + q, acc[m][q]);
    }
}

}  // namespace

void launch_blockwise_gemv(const BlockwiseGemm& p, cudaStream_t stream) {
  if (p.m == 0 || p.n == 0) return;
  // Two columns per warp from M = 3 on (one load of A serves both): 4 x 8192 x 8192 0.0302 ms
  // against 0.0349 with one column; at M = 1 two columns measured slower (0.0198 against 0.0170
  // ms; H200 run 23).
  const int columns = p.m >= 3 ? 2 : 1;
  const auto grid = static_cast<unsigned>((p.n + kWarps * columns - 1) / (kWarps * columns));
  if (p.m == 1) qbw_gemv_kernel<1, 1><<<grid, kWarps * 32, 0, stream>>>(p);
  else if (p.m == 2) qbw_gemv_kernel<2, 1><<<grid, kWarps * 32, 0, stream>>>(p);
  else qbw_gemv_kernel<4, 2><<<grid, kWarps * 32, 0, stream>>>(p);
  check_launch("qbw_gemv_kernel");
}

}  // namespace qforge::cuda
