// Skinny-M int8 GEMM (M <= 32, large N and K: GEMV-like decoding shapes), mma.sync m16n8k32.
//
// The time of such a call is the time to stream B (N x K bytes) once, so the kernel is built
// around B's loads rather than around the tensor cores: no ldmatrix, no shared tiles, every B
// byte is copied once into shared memory by the thread that will use it and read back straight
// into an mma fragment register.
//
// - A CTA of 8 warps owns 32 columns of N (4 n8 tiles) and up to 32 rows of M (1 or 2 m16
//   tiles; rows past M are zero-filled, never read). Its warps split K between them in 64-byte
//   steps (warp w takes steps w, w + 8, ...), so one round of the CTA reads 512 contiguous bytes
//   of each of its 32 B rows.
// - K is permuted inside each 64-byte step, identically for A and B (an integer dot product does
//   not depend on the order of its terms): thread (g, t) of a warp takes the 16 bytes
//   16t..16t+15 of its B row n0 + g and of its A rows g and g + 8; words 0 and 1 are its fragment
//   registers of the first m16n8k32 (logical k 4t..4t+3 and 16+4t..16+4t+3), words 2 and 3 those
//   of the second. So one 16-byte piece feeds two mma, A and B alike, with no shuffles.
// - Each thread keeps S steps of its own pieces in flight with cp.async (a per-thread ring in
//   shared memory: no barrier, no register cost). The first version loaded into registers; ptxas
//   interleaved the loads with the mma that use them, a few loads were in flight per warp, and B
//   streamed at 0.5-0.6 of the copy bandwidth (H200 run 7).
// - The 8 warps' partial sums meet in shared memory (int32: any order gives the same sum) and
//   the CTA applies the fused epilogue itself: no workspace, no memset, no atomics, no second
//   kernel. Only when there are fewer CTAs than SMs (small N) is K also split across CTAs, and
//   then the raw sums go through the shared split-K path (launch_gemm's workspace).
// Any M works (grid.z walks M in slices of 32), so the kernel can be forced on every shape.
#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "check.h"
#include "kernels/epilogue.cuh"
#include "kernels/gemm_mma.cuh"
#include "kernels/ptx.cuh"

namespace qforge::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kBN = 32;       // columns per CTA
constexpr int kNT = kBN / 8;  // n8 tiles per warp
constexpr int kStep = 64;     // K bytes per warp step

template <int MT>
constexpr int slots_of() {
  return kNT + 2 * MT;
}  // 16-byte pieces per thread and step

// Dynamic shared memory: the ring of S stages (each thread's own pieces), later reused for the
// warps' partial sums.
template <int MT, int S>
constexpr int smem_of() {
  constexpr int ring = S * kWarps * 32 * slots_of<MT>() * 16;
  constexpr int red = kWarps * MT * 16 * kBN * 4;
  return ring > red ? ring : red;
}

// The 8 warps' partial sums of a CTA meet in shared memory red[warp][row][col] (int32: any
// order gives the same sum) and the CTA applies the fused epilogue itself.
template <int MT>
__device__ __forceinline__ void reduce_and_store(int (*red)[MT * 16][kBN],
                                                 const int (&acc)[MT][kNT][4], const Epilogue& ep,
                                                 std::int64_t m0, std::int64_t n0) {
  constexpr int kRows = MT * 16;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  // Accumulator fragment: c0, c1 at (row g, cols 2t, 2t + 1), c2, c3 at row g + 8.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
      *reinterpret_cast<int2*>(&red[warp][mt * 16 + g][8 * j + 2 * t]) =
          make_int2(acc[mt][j][0], acc[mt][j][1]);
      *reinterpret_cast<int2*>(&red[warp][mt * 16 + g + 8][8 * j + 2 * t]) =
          make_int2(acc[mt][j][2], acc[mt][j][3]);
    }
  __syncthreads();
  constexpr int kPairs = kRows * kBN / 2;
#pragma unroll
  for (int p = threadIdx.x; p < kPairs; p += kThreads) {
    const int r = p / (kBN / 2), c = (p % (kBN / 2)) * 2;
    int s0 = 0, s1 = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const int2 v = *reinterpret_cast<const int2*>(&red[w][r][c]);
      s0 += v.x;
      s1 += v.y;
    }
    dev::store_pair(ep, m0 + r, n0 + c, s0, s1);
  }
}

// The first version of this kernel (H200 run 7), kept for 17 <= M <= 32: each thread loads U
// steps of its B and A pieces into registers before using any. ptxas interleaves those loads
// with the mma that use them, so few are in flight: B streamed at 0.46-0.58 of the copy for
// M <= 16, where the ring below wins; with two m16 tiles the mma work per load doubles and this
// version measured faster (M = 32: 0.0270 ms against the ring's 0.0305-0.0376 ms in runs 8-9,
// torch._int_mm 0.0332-0.0362 ms).
__device__ __forceinline__ uint4 load_stream(const std::int8_t* p) {
  uint4 v;
  // B is read exactly once: do not let it evict A from L1.
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

template <int MT, int U>
__global__ void __launch_bounds__(kThreads)
    s8_gemm_skinny_registers_kernel(GemmOperands op, const __grid_constant__ Epilogue ep,
                                    int steps_per_split) {
  constexpr int kRows = MT * 16;
  __shared__ int red[kWarps][kRows][kBN];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * kBN;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.z) * kRows;
  const std::int64_t steps = (op.kp + kStep - 1) / kStep;
  const std::int64_t s_begin = static_cast<std::int64_t>(blockIdx.y) * steps_per_split;
  const std::int64_t s_end = min(steps, s_begin + steps_per_split);

  const std::int8_t* brow[kNT];
  bool bok[kNT];
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const std::int64_t n = n0 + 8 * j + g;
    bok[j] = n < op.n;
    brow[j] = op.b + (bok[j] ? n : 0) * op.ldb + 16 * t;
  }
  const std::int8_t* arow[MT][2];
  bool aok[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::int64_t m = m0 + mt * 16 + h * 8 + g;
      aok[mt][h] = m < op.m;
      arow[mt][h] = op.a + (aok[mt][h] ? m : 0) * op.lda + 16 * t;
    }

  int acc[MT][kNT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < kNT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[mt][j][r] = 0;

  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (std::int64_t s0 = s_begin + warp; s0 < s_end; s0 += U * kWarps) {
    uint4 bv[U][kNT], av[U][MT][2];
    // All loads of U steps first; a 16-byte chunk lies wholly inside or outside kp (a
    // multiple of 16), and outside it both operands are zero.
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t s = s0 + static_cast<std::int64_t>(u) * kWarps;
      const std::int64_t k = s * kStep + 16 * t;
      const bool kin = s < s_end && k < op.kp;
#pragma unroll
      for (int j = 0; j < kNT; ++j)
        bv[u][j] = kin && bok[j] ? load_stream(brow[j] + s * kStep) : zero;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          av[u][mt][h] = kin && aok[mt][h]
                             ? __ldg(reinterpret_cast<const uint4*>(arow[mt][h] + s * kStep))
                             : zero;
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const std::uint32_t a_lo[4] = {av[u][mt][0].x, av[u][mt][1].x, av[u][mt][0].y,
                                       av[u][mt][1].y};
        const std::uint32_t a_hi[4] = {av[u][mt][0].z, av[u][mt][1].z, av[u][mt][0].w,
                                       av[u][mt][1].w};
#pragma unroll
        for (int j = 0; j < kNT; ++j) {
          const std::uint32_t b_lo[2] = {bv[u][j].x, bv[u][j].y};
          const std::uint32_t b_hi[2] = {bv[u][j].z, bv[u][j].w};
          dev::mma_s8_m16n8k32(acc[mt][j], a_lo, b_lo);
          dev::mma_s8_m16n8k32(acc[mt][j], a_hi, b_hi);
        }
      }
  }
  reduce_and_store<MT>(red, acc, ep, m0, n0);
}

template <int MT, int S>
__global__ void __launch_bounds__(kThreads)
    s8_gemm_skinny_kernel(GemmOperands op, const __grid_constant__ Epilogue ep,
                          int steps_per_split) {
  constexpr int kRows = MT * 16;
  constexpr int kSlots = slots_of<MT>();
  extern __shared__ __align__(16) std::uint8_t smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * kBN;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.z) * kRows;
  const std::int64_t steps = (op.kp + kStep - 1) / kStep;
  const std::int64_t s_begin = static_cast<std::int64_t>(blockIdx.y) * steps_per_split;
  const std::int64_t s_end = min(steps, s_begin + steps_per_split);

  // Piece j < kNT: B row n0 + 8j + g; then A rows mt * 16 + g and mt * 16 + g + 8. Bytes 16t..
  // 16t + 15 of the step. Rows outside the matrix read nothing (zero-filled).
  const std::int8_t* src[kSlots];
  bool ok[kSlots];
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const std::int64_t n = n0 + 8 * j + g;
    ok[j] = n < op.n;
    src[j] = op.b + (ok[j] ? n : 0) * op.ldb + 16 * t;
  }
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::int64_t m = m0 + mt * 16 + h * 8 + g;
      const int j = kNT + 2 * mt + h;
      ok[j] = m < op.m;
      src[j] = op.a + (ok[j] ? m : 0) * op.lda + 16 * t;
    }
  // This thread's piece (stage, slot): consecutive lanes hold consecutive 16 bytes, so the
  // shared reads are conflict-free; no other thread ever reads it, so the ring needs no barrier.
  const std::uint32_t ring = dev::smem_addr(smem);
  auto slot_addr = [&](int stage, int j) {
    return ring +
           static_cast<std::uint32_t>((((stage * kWarps + warp) * kSlots + j) * 32 + lane) * 16);
  };
  const std::int64_t my_steps =
      s_end > s_begin + warp ? (s_end - s_begin - warp + kWarps - 1) / kWarps : 0;
  auto issue = [&](std::int64_t i) {  // the warp's i-th step into stage i % S
    if (i < my_steps) {
      const std::int64_t s = s_begin + warp + i * kWarps;
      const std::int64_t k = s * kStep + 16 * t;
      const bool kin = k < op.kp;  // a 16-byte piece lies wholly inside or outside kp
      const int stage = static_cast<int>(i % S);
#pragma unroll
      for (int j = 0; j < kSlots; ++j) {
        const bool v = kin && ok[j];
        if (j < kNT)  // B is read once: L2 only
          dev::cp_async16(slot_addr(stage, j), v ? src[j] + s * kStep : op.b, v ? 16 : 0);
        else  // A is read by every CTA: through L1 as well
          dev::cp_async16_ca(slot_addr(stage, j), v ? src[j] + s * kStep : op.a, v ? 16 : 0);
      }
    }
    dev::cp_async_commit();  // one group per step, empty past the end
  };

  int acc[MT][kNT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < kNT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[mt][j][r] = 0;

#pragma unroll
  for (int i = 0; i < S - 1; ++i) issue(i);
  for (std::int64_t i = 0; i < my_steps; ++i) {
    dev::cp_async_wait<S - 2>();  // step i has landed (this thread's own copies)
    const int stage = static_cast<int>(i % S);
    uint4 piece[kSlots];
#pragma unroll
    for (int j = 0; j < kSlots; ++j)
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(piece[j].x), "=r"(piece[j].y), "=r"(piece[j].z), "=r"(piece[j].w)
                   : "r"(slot_addr(stage, j))
                   : "memory");
    issue(i + S - 1);  // refills the stage read in the previous iteration
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const uint4& lo = piece[kNT + 2 * mt];
      const uint4& hi = piece[kNT + 2 * mt + 1];
      // Words 0 and 1 feed the first m16n8k32 of the step, words 2 and 3 the second.
      const std::uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y};
      const std::uint32_t a1[4] = {lo.z, hi.z, lo.w, hi.w};
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        const std::uint32_t b0[2] = {piece[j].x, piece[j].y};
        const std::uint32_t b1[2] = {piece[j].z, piece[j].w};
        dev::mma_s8_m16n8k32(acc[mt][j], a0, b0);
        dev::mma_s8_m16n8k32(acc[mt][j], a1, b1);
      }
    }
  }
  dev::cp_async_wait<0>();
  __syncthreads();  // the ring becomes the reduction buffer

  reduce_and_store<MT>(reinterpret_cast<int(*)[kRows][kBN]>(smem), acc, ep, m0, n0);
}

// Raising the dynamic shared-memory limit is per device and kernel; once each.
template <int MT, int S>
void allow_shared_memory(int device) {
  // Atomic: plans of one process run from several threads (the attribute is idempotent).
  static std::atomic<bool> done[64] = {};
  const int slot = device >= 0 && device < 64 ? device : 0;
  if (done[slot].load(std::memory_order_acquire)) return;
  check(cudaFuncSetAttribute(s8_gemm_skinny_kernel<MT, S>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem_of<MT, S>()),
        "cudaFuncSetAttribute(s8_gemm_skinny_kernel, MaxDynamicSharedMemorySize)");
  done[slot].store(true, std::memory_order_release);
}

template <int MT, int S>
void run(const GemmOperands& op, const Epilogue& ep, int splits, int device, cudaStream_t stream) {
  allow_shared_memory<MT, S>(device);
  const std::int64_t steps = (op.kp + kStep - 1) / kStep;
  const std::int64_t per_split = std::max<std::int64_t>(1, (steps + splits - 1) / splits);
  const std::int64_t used = std::max<std::int64_t>(1, (steps + per_split - 1) / per_split);
  const dim3 grid(static_cast<unsigned>((op.n + kBN - 1) / kBN), static_cast<unsigned>(used),
                  static_cast<unsigned>((op.m + MT * 16 - 1) / (MT * 16)));
  s8_gemm_skinny_kernel<MT, S>
      <<<grid, kThreads, smem_of<MT, S>(), stream>>>(op, ep, static_cast<int>(per_split));
  check_launch("s8_gemm_skinny_kernel");
}

template <int MT, int U>
void run_registers(const GemmOperands& op, const Epilogue& ep, int splits, cudaStream_t stream) {
  const std::int64_t steps = (op.kp + kStep - 1) / kStep;
  const std::int64_t per_split = std::max<std::int64_t>(1, (steps + splits - 1) / splits);
  const std::int64_t used = std::max<std::int64_t>(1, (steps + per_split - 1) / per_split);
  const dim3 grid(static_cast<unsigned>((op.n + kBN - 1) / kBN), static_cast<unsigned>(used),
                  static_cast<unsigned>((op.m + MT * 16 - 1) / (MT * 16)));
  s8_gemm_skinny_registers_kernel<MT, U>
      <<<grid, kThreads, 0, stream>>>(op, ep, static_cast<int>(per_split));
  check_launch("s8_gemm_skinny_registers_kernel");
}

}  // namespace

void launch_gemm_skinny(const GemmOperands& op, const Epilogue& ep, int splits, int device,
                        cudaStream_t stream) {
  // One m16 tile and a 4-stage ring up to M = 16 (96 KB of shared memory: 2 CTAs per SM), two
  // m16 tiles and 3 stages above (96 KB). QFORGE_CUDA_SKINNY_STAGES=2|3|4|6 overrides the ring
  // depth (an experiment switch: shared memory per CTA trades against copies in flight).
  // 17 <= M <= 32 takes the register version (two m16 tiles, 2 steps of loads per thread) unless
  // the switch asks for a ring depth.
  int stages = op.m <= 16 ? 4 : 3;
  const char* env = std::getenv("QFORGE_CUDA_SKINNY_STAGES");
  const bool forced_ring = env != nullptr && env[0] != '\0';
  if (forced_ring) stages = std::atoi(env);
  if (op.m > 16 && op.m <= 32 && !forced_ring) return run_registers<2, 2>(op, ep, splits, stream);
  if (op.m <= 16) {
    switch (stages) {
      case 2: run<1, 2>(op, ep, splits, device, stream); break;
      case 3: run<1, 3>(op, ep, splits, device, stream); break;
      case 6: run<1, 6>(op, ep, splits, device, stream); break;
      default: run<1, 4>(op, ep, splits, device, stream); break;
    }
  } else {
    switch (stages) {
      case 2: run<2, 2>(op, ep, splits, device, stream); break;
      case 4: run<2, 4>(op, ep, splits, device, stream); break;
      case 6: run<2, 6>(op, ep, splits, device, stream); break;
      default: run<2, 3>(op, ep, splits, device, stream); break;
    }
  }
}

int skinny_splits(std::int64_t m, std::int64_t n, std::int64_t kp, int multiprocessors) {
  // Split K across CTAs only when there are fewer CTAs than SMs, keeping at least two rounds
  // of the CTA's 8 warps per split.
  const std::int64_t ctas = ((n + kBN - 1) / kBN) * ((m + 31) / 32);
  const std::int64_t steps = (kp + kStep - 1) / kStep;
  if (ctas >= multiprocessors) return 1;
  const std::int64_t want = (std::max(1, multiprocessors) + ctas - 1) / ctas;
  return static_cast<int>(std::clamp<std::int64_t>(std::min(want, steps / (2 * kWarps)), 1, 16));
}

}  // namespace qforge::cuda
