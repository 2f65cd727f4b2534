// Block-wise 4-bit B times a few rows of A (M <= 4): the weight-only GEMV of decoding, where
// the work is streaming B once. The tensor-core kernels (gemm_blockwise.cu) fill m16 tiles with
// 15 rows of zeros here and stage B through shared memory; this one keeps B in registers and
// multiplies on the CUDA cores with __dp4a (a GEMV needs 2 operations per B byte, far below
// the dp4a rate), so its speed is that of its loads.
//
// One warp owns one row n of B (one output column). Lane l takes the 32-code pieces l, l + 32,
// ... of the row: 16 bytes of codes, coalesced across the warp, the piece's scale (and zero
// point), and the 32 matching bytes of each row of A (L1-resident: every warp reads the same A).
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

constexpr int kWarps = 8;  // rows of B per CTA
constexpr int kUnroll = 4;  // pieces per lane loaded before any is used

// dot of unsigned bytes a with signed bytes b, plus c.
__device__ __forceinline__ int dp4a_us(unsigned a, int b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

__device__ __forceinline__ void store_output(const BlockwiseGemm& p, std::int64_t m, std::int64_t n, float v) {
  v = __fmul_rn(v, dev::at(p.sa, m));
  if (p.bias) v = __fadd_rn(v, p.bias[n]);  // only then: adding +0.0 would turn -0.0 into +0.0
  const std::int64_t off = m * p.ldc + n;
  if (p.out_type == FloatType::f32)
    static_cast<float*>(p.out)[off] = v;
  else if (p.out_type == FloatType::f16)
    static_cast<__half*>(p.out)[off] = __float2half_rn(v);
  else
    static_cast<__nv_bfloat16*>(p.out)[off] = __float2bfloat16_rn(v);
}

template <int M>
__global__ void __launch_bounds__(kWarps * 32) qbw_gemv_kernel(const __grid_constant__ BlockwiseGemm p) {
  const int lane = threadIdx.x % 32;
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (n >= p.n) return;
  const BlockwiseB& b = p.b;
  const std::uint8_t* codes = b.codes + n * b.ld;
  const std::int64_t pairs = n * b.blocks;
  const std::int64_t pieces = p.groups;      // 32-code pieces along K
  const int per_block = static_cast<int>(b.block / 32);  // pieces per block (block % 32 == 0)
  const unsigned flip = b.is_signed ? 0x88888888u : 0u;  // int4 -> offset binary
  const int z_shift = b.is_signed ? 8 : 0;
  int za[M];
#pragma unroll
  for (int m = 0; m < M; ++m) za[m] = m < p.m ? dev::at(p.za, m) : 0;
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.0f;

  for (std::int64_t base = lane; base < pieces; base += 32 * kUnroll) {
    uint4 raw[kUnroll];
    float scale[kUnroll];
    int zero[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t c = base + 32 * u;
      if (c < pieces) {
        raw[u] = __ldcs(reinterpret_cast<const uint4*>(codes) + c);  // streamed once
        const std::int64_t j = pairs + c / per_block;
        scale[u] = __ldg(b.scales + j);
        zero[u] = (b.zero_points ? __ldg(b.zero_points + j) : b.zero_point0) + z_shift;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t c = base + 32 * u;
      if (c >= pieces) break;
      const unsigned w[4] = {raw[u].x ^ flip, raw[u].y ^ flip, raw[u].z ^ flip, raw[u].w ^ flip};
      unsigned lo[4], hi[4];
      int sum_u = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        lo[i] = w[i] & 0x0F0F0F0Fu;
        hi[i] = (w[i] >> 4) & 0x0F0F0F0Fu;
        sum_u = dp4a_us(lo[i] + hi[i], 0x01010101, sum_u);  // nibble pairs: at most 30 per byte
      }
      const std::int64_t k0 = c * 32;
#pragma unroll
      for (int m = 0; m < M; ++m) {
        if (m >= p.m) break;
        const std::int8_t* arow = p.a + m * p.lda + k0;
        // A holds lda bytes (a multiple of 16, zero past K): the second half of the last piece
        // may lie past it.
        const uint4 a0 = __ldg(reinterpret_cast<const uint4*>(arow));
        const uint4 a1 = k0 + 16 < p.lda ? __ldg(reinterpret_cast<const uint4*>(arow + 16)) : make_uint4(0, 0, 0, 0);
        const unsigned av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        int dot = 0, sum_a = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int even = static_cast<int>(__byte_perm(av[2 * i], av[2 * i + 1], 0x6420));
          const int odd = static_cast<int>(__byte_perm(av[2 * i], av[2 * i + 1], 0x7531));
          dot = dp4a_us(lo[i], even, dot);
          dot = dp4a_us(hi[i], odd, dot);
          sum_a = __dp4a(static_cast<int>(av[2 * i]), 0x01010101, sum_a);
          sum_a = __dp4a(static_cast<int>(av[2 * i + 1]), 0x01010101, sum_a);
        }
        const int cc = dot - zero[u] * sum_a - za[m] * (sum_u - 32 * zero[u]);
        acc[m] = __fmaf_rn(static_cast<float>(cc), scale[u], acc[m]);
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[m] = __fadd_rn(acc[m], __shfl_xor_sync(0xFFFFFFFFu, acc[m], o));
    if (lane == 0 && m < p.m) store_output(p, m, n, acc[m]);
  }
}

}  // namespace

void launch_blockwise_gemv(const BlockwiseGemm& p, cudaStream_t stream) {
  if (p.m == 0 || p.n == 0) return;
  const auto grid = static_cast<unsigned>((p.n + kWarps - 1) / kWarps);
  switch (p.m) {
    case 1: qbw_gemv_kernel<1><<<grid, kWarps * 32, 0, stream>>>(p); break;
    case 2: qbw_gemv_kernel<2><<<grid, kWarps * 32, 0, stream>>>(p); break;
    default: qbw_gemv_kernel<4><<<grid, kWarps * 32, 0, stream>>>(p); break;
  }
  check_launch("qbw_gemv_kernel");
}

}  // namespace qforge::cuda
