// int8 GEMM on the tensor cores through mma.sync.m16n8k32 (sm_80 and newer).
//
// A CTA computes a BM x BN tile of C' over its share of K (all of it, or a split-K slice). K
// advances in BK = 64-byte steps through a STAGES-deep ring of shared-memory buffers filled with
// cp.async (16-byte copies that zero-fill outside the matrix, so odd M, N and K need no special
// path). Shared rows are 64 bytes = four 16-byte chunks; chunk c of row r is stored at chunk
// c ^ ((r >> 1) & 3), so the eight rows one ldmatrix phase reads fall into eight different
// 16-byte bank groups. Each warp owns a TM x TN sub-tile held as int32 accumulator fragments and
// hands them to the shared epilogue in pairs of columns.
#include <algorithm>
#include <atomic>

#include "check.h"
#include "kernels/epilogue.cuh"
#include "kernels/gemm_mma.cuh"
#include "kernels/ptx.cuh"

namespace qforge::cuda {
namespace {

template <int BM_, int BN_, int WM_, int WN_, int STAGES_>
struct MmaTile {
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, STAGES = STAGES_;
  static constexpr int BK = 64;
  static constexpr int THREADS = WM * WN * 32;
  static constexpr int TM = BM / WM, TN = BN / WN;
  static constexpr int MT = TM / 16, NT = TN / 8;
  static constexpr int SMEM = STAGES * (BM + BN) * BK;
  static_assert(TM % 16 == 0 && TN % 16 == 0, "warp tile must be whole m16 x n16 pieces");
  static_assert((BM * 4) % THREADS == 0 && (BN * 4) % THREADS == 0, "even copy split");
};

using Tile128x256 = MmaTile<128, 256, 2, 4, 4>;
using Tile128x128 = MmaTile<128, 128, 2, 2, 4>;
using Tile32x128 = MmaTile<32, 128, 1, 4, 6>;

__device__ __forceinline__ std::uint32_t swizzled(int row, int chunk) {
  return static_cast<std::uint32_t>(row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4));
}

// Tile order: groups of 8 tile rows sweep the N tiles together, so a wave of CTAs shares A rows
// and B columns in L2 (Triton's grouped ordering).
__device__ __forceinline__ void tile_coords(int tiles_m, int tiles_n, int& tm, int& tn) {
  constexpr int kGroup = 8;
  const int id = blockIdx.x;
  const int per_group = kGroup * tiles_n;
  const int first_m = (id / per_group) * kGroup;
  const int group_m = min(tiles_m - first_m, kGroup);
  tm = first_m + (id % per_group) % group_m;
  tn = (id % per_group) / group_m;
}

template <class T>
__global__ void __launch_bounds__(T::THREADS)
    s8_gemm_mma_kernel(GemmOperands op, const __grid_constant__ Epilogue ep,
                       int k_tiles_per_split) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  const std::uint32_t sA = dev::smem_addr(smem);
  const std::uint32_t sB = sA + T::STAGES * T::BM * T::BK;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp % T::WM, wn = warp / T::WM;

  const int tiles_m = static_cast<int>((op.m + T::BM - 1) / T::BM);
  const int tiles_n = static_cast<int>((op.n + T::BN - 1) / T::BN);
  int tm, tn;
  tile_coords(tiles_m, tiles_n, tm, tn);
  const std::int64_t m0 = static_cast<std::int64_t>(tm) * T::BM;
  const std::int64_t n0 = static_cast<std::int64_t>(tn) * T::BN;

  const int k_tiles = static_cast<int>((op.kp + T::BK - 1) / T::BK);
  const int kt_begin = blockIdx.y * k_tiles_per_split;
  const int kt_count = max(0, min(k_tiles, kt_begin + k_tiles_per_split) - kt_begin);

  const int rot = op.k_rotate && kt_count > 0 ? static_cast<int>(blockIdx.x % kt_count) : 0;
  auto k_tile = [&](int i) {
    const int j = i + rot;
    return kt_begin + (j >= kt_count ? j - kt_count : j);
  };
  auto load_tile = [&](int stage, int kt) {
    const std::int64_t k0 = static_cast<std::int64_t>(kt) * T::BK;
#pragma unroll
    for (int i = 0; i < T::BM * 4 / T::THREADS; ++i) {
      const int c = tid + i * T::THREADS, row = c / 4, chunk = c % 4;
      const std::int64_t gm = m0 + row, gk = k0 + chunk * 16;
      const bool ok = gm < op.m && gk < op.kp;
      dev::cp_async16(sA + stage * T::BM * T::BK + swizzled(row, chunk),
                      ok ? op.a + gm * op.lda + gk : op.a, ok ? 16 : 0);
    }
#pragma unroll
    for (int i = 0; i < T::BN * 4 / T::THREADS; ++i) {
      const int c = tid + i * T::THREADS, row = c / 4, chunk = c % 4;
      const std::int64_t gn = n0 + row, gk = k0 + chunk * 16;
      const bool ok = gn < op.n && gk < op.kp;
      dev::cp_async16(sB + stage * T::BN * T::BK + swizzled(row, chunk),
                      ok ? op.b + gn * op.ldb + gk : op.b, ok ? 16 : 0);
    }
  };

  int acc[T::MT][T::NT][4];
#pragma unroll
  for (int i = 0; i < T::MT; ++i)
#pragma unroll
    for (int j = 0; j < T::NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0;

        // Prologue: STAGES - 1 tiles in flight. Every iteration commits one group (possibly empty)
        // so that wait_group<STAGES - 2> always means "the tile about to be used has landed".
#pragma unroll
  for (int s = 0; s < T::STAGES - 1; ++s) {
    if (s < kt_count) load_tile(s, k_tile(s));
    dev::cp_async_commit();
  }

  for (int it = 0; it < kt_count; ++it) {
    dev::cp_async_wait<T::STAGES - 2>();
    __syncthreads();  // tile `it` visible to all; everyone is done with the buffer refilled next
    const int next = it + T::STAGES - 1;
    if (next < kt_count) load_tile(next % T::STAGES, k_tile(next));
    dev::cp_async_commit();

    const int stage = it % T::STAGES;
    const std::uint32_t a_base = sA + stage * T::BM * T::BK;
    const std::uint32_t b_base = sB + stage * T::BN * T::BK;
#pragma unroll
    for (int kk = 0; kk < T::BK / 32; ++kk) {
      std::uint32_t af[T::MT][4], bf[T::NT][2];
#pragma unroll
      for (int mt = 0; mt < T::MT; ++mt) {
        // lanes 0-15: rows 0-15 at k 0-15; lanes 16-31: rows 0-15 at k 16-31 -> a0..a3
        const int row = wm * T::TM + mt * 16 + (lane % 16);
        dev::ldmatrix_x4(af[mt][0], af[mt][1], af[mt][2], af[mt][3],
                         a_base + swizzled(row, kk * 2 + lane / 16));
      }
#pragma unroll
      for (int np = 0; np < T::NT / 2; ++np) {
        // matrices: (n 0-7, k 0-15), (n 0-7, k 16-31), (n 8-15, k 0-15), (n 8-15, k 16-31)
        const int row = wn * T::TN + np * 16 + (lane % 8) + (lane / 16) * 8;
        dev::ldmatrix_x4(bf[2 * np][0], bf[2 * np][1], bf[2 * np + 1][0], bf[2 * np + 1][1],
                         b_base + swizzled(row, kk * 2 + (lane / 8) % 2));
      }
#pragma unroll
      for (int mt = 0; mt < T::MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < T::NT; ++nt) dev::mma_s8_m16n8k32(acc[mt][nt], af[mt], bf[nt]);
    }
  }
  dev::cp_async_wait<0>();

  // Accumulator fragment: c0, c1 at (row g, cols 2t, 2t+1), c2, c3 at row g + 8.
  const int g = lane / 4, t = lane % 4;
  const std::int64_t row0 = m0 + wm * T::TM + g, col0 = n0 + wn * T::TN + t * 2;
  dev::store_fragment<2 * T::MT, T::NT>(
      ep, [&](int r) { return row0 + (r / 2) * 16 + (r % 2) * 8; },
      [&](int c) { return col0 + 8 * c; },
      [&](int r, int c, int h) { return acc[r / 2][c][(r % 2) * 2 + h]; });
}

// Raising a kernel's dynamic shared-memory limit is per device; do it once per device.
template <class T>
void allow_shared_memory(int device) {
  // Atomic: plans of one process run from several threads (the attribute is idempotent).
  static std::atomic<bool> done[64] = {};
  const int slot = device >= 0 && device < 64 ? device : 0;
  if (done[slot].load(std::memory_order_acquire)) return;
  check(cudaFuncSetAttribute(s8_gemm_mma_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             T::SMEM),
        "cudaFuncSetAttribute(s8_gemm_mma_kernel, MaxDynamicSharedMemorySize)");
  done[slot].store(true, std::memory_order_release);
}

template <class T>
void run(const GemmOperands& op, const Epilogue& ep, int splits, int device, cudaStream_t stream) {
  allow_shared_memory<T>(device);
  const int tiles = static_cast<int>(((op.m + T::BM - 1) / T::BM) * ((op.n + T::BN - 1) / T::BN));
  const int k_tiles = static_cast<int>((op.kp + T::BK - 1) / T::BK);
  const int per_split = std::max(1, (k_tiles + splits - 1) / splits);
  const int used_splits = std::max(1, (k_tiles + per_split - 1) / per_split);
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(used_splits));
  s8_gemm_mma_kernel<T><<<grid, T::THREADS, T::SMEM, stream>>>(op, ep, per_split);
  check_launch("s8_gemm_mma_kernel");
}

}  // namespace

void launch_gemm_mma(GemmKernel kernel, const GemmOperands& op, const Epilogue& ep, int splits,
                     int device, cudaStream_t stream) {
  switch (kernel) {
    case GemmKernel::mma_128x256: run<Tile128x256>(op, ep, splits, device, stream); break;
    case GemmKernel::mma_128x128: run<Tile128x128>(op, ep, splits, device, stream); break;
    case GemmKernel::mma_32x128: run<Tile32x128>(op, ep, splits, device, stream); break;
    default: break;
  }
}

}  // namespace qforge::cuda
