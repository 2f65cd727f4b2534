// int8 GEMM on the CUDA cores with __dp4a (four int8 products summed into an int32 in one
// instruction): the path for GPUs without int8 tensor cores and the fallback everywhere.
//
// 128x128 CTA tile, 256 threads, 8x8 outputs per thread (rows ty*4+i and 64+ty*4+i, columns
// tx*4+j and 64+tx*4+j, so the shared-memory reads of a warp are broadcasts for A and one
// contiguous 256-byte run for B). K advances 32 bytes (8 words) per step; the next step's tile
// is loaded into registers while the current one is multiplied (double-buffered shared memory).
// Shared tiles are stored word-major ([k word][row]) with rows padded to 132 words, which keeps
// the transposing stores free of bank conflicts between the two halves of a row's 32 bytes.
#include "check.h"
#include "kernels/epilogue.cuh"
#include "kernels/gemm_mma.cuh"

namespace qforge::cuda {
namespace {

constexpr int kBM = 128, kBN = 128, kBKW = 8;  // BK = 8 words = 32 int8
constexpr int kLd = 132;
constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    s8_gemm_dp4a_kernel(GemmOperands op, const __grid_constant__ Epilogue ep) {
  __shared__ __align__(16) int sA[2][kBKW][kLd];
  __shared__ __align__(16) int sB[2][kBKW][kLd];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.y) * kBM;
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * kBN;
  // Each thread copies 16 bytes (4 words) of one A row and one B row per step.
  const int lrow = tid / 2, lhalf = tid % 2;
  const std::int64_t gm = m0 + lrow, gn = n0 + lrow;
  const int k_steps = static_cast<int>((op.kp + 31) / 32);

  const int rot = op.k_rotate && k_steps > 0
                      ? static_cast<int>((blockIdx.y * gridDim.x + blockIdx.x) % k_steps)
                      : 0;
  auto fetch = [&](int step, int4& ra, int4& rb) {
    const int phys =
        step + rot >= k_steps ? step + rot - k_steps : step + rot;  // GemmOperands::k_rotate
    const std::int64_t k = static_cast<std::int64_t>(phys) * 32 + lhalf * 16;
    ra = (gm < op.m && k < op.kp) ? *reinterpret_cast<const int4*>(op.a + gm * op.lda + k)
                                  : int4{0, 0, 0, 0};
    rb = (gn < op.n && k < op.kp) ? *reinterpret_cast<const int4*>(op.b + gn * op.ldb + k)
                                  : int4{0, 0, 0, 0};
  };
  auto stash = [&](int buf, const int4& ra, const int4& rb) {
    const int w = lhalf * 4;
    sA[buf][w][lrow] = ra.x;
    sA[buf][w + 1][lrow] = ra.y;
    sA[buf][w + 2][lrow] = ra.z;
    sA[buf][w + 3][lrow] = ra.w;
    sB[buf][w][lrow] = rb.x;
    sB[buf][w + 1][lrow] = rb.y;
    sB[buf][w + 2][lrow] = rb.z;
    sB[buf][w + 3][lrow] = rb.w;
  };

  int acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0;

  int4 ra, rb;
  if (k_steps > 0) {
    fetch(0, ra, rb);
    stash(0, ra, rb);
  }
  __syncthreads();
  for (int step = 0; step < k_steps; ++step) {
    const int buf = step % 2;
    if (step + 1 < k_steps) fetch(step + 1, ra, rb);
#pragma unroll
    for (int w = 0; w < kBKW; ++w) {
      const int4 a0 = *reinterpret_cast<const int4*>(&sA[buf][w][ty * 4]);
      const int4 a1 = *reinterpret_cast<const int4*>(&sA[buf][w][64 + ty * 4]);
      const int4 b0 = *reinterpret_cast<const int4*>(&sB[buf][w][tx * 4]);
      const int4 b1 = *reinterpret_cast<const int4*>(&sB[buf][w][64 + tx * 4]);
      const int a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const int b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = __dp4a(a[i], b[j], acc[i][j]);
    }
    if (step + 1 < k_steps) stash(buf ^ 1, ra, rb);
    __syncthreads();
  }

  dev::store_fragment<8, 4>(
      ep, [&](int r) { return m0 + (r < 4 ? ty * 4 + r : 64 + ty * 4 + (r - 4)); },
      [&](int c) { return n0 + (c < 2 ? tx * 4 + 2 * c : 64 + tx * 4 + 2 * (c - 2)); },
      [&](int r, int c, int h) { return acc[r][2 * c + h]; });
}

}  // namespace

void launch_gemm_dp4a(const GemmOperands& op, const Epilogue& ep, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((op.n + kBN - 1) / kBN),
                  static_cast<unsigned>((op.m + kBM - 1) / kBM));
  s8_gemm_dp4a_kernel<<<grid, kThreads, 0, stream>>>(op, ep);
  check_launch("s8_gemm_dp4a_kernel");
}

}  // namespace qforge::cuda
