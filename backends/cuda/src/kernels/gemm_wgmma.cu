// int8 GEMM for Hopper (sm_90a): wgmma.mma_async m64n256k32 fed by the tensor memory
// accelerator (TMA), warp-specialised and persistent.
//
// 384 threads: warpgroup 0 is the producer (one thread issues the TMA copies of each stage),
// warpgroups 1 and 2 are consumers, each owning 64 rows of the 128x256 CTA tile as 128 int32
// accumulators per thread. K advances 128 bytes per stage through a 4-deep ring of 48 KB
// stages; "full" mbarriers complete when a stage's bytes have landed (TMA's complete_tx),
// "empty" ones when both consumers' wgmmas have finished reading it. Tiles are handed out
// persistently (grid = number of SMs), so the producer already loads the next tile while the
// consumers run the epilogue of the current one.
//
// Split-K (few tiles, skinny M): work item w is split w % splits of tile w / splits. Every item
// leaves its raw int32 accumulators in a partial slot of the workspace (thread-major, so the
// stores are coalesced and need no knowledge of the fragment layout); the last item of a tile to
// arrive (a counter per tile, reset by that item) adds the other slots to its registers and runs
// the fused epilogue itself. Integer addition is exact and order-free. This replaced a memset,
// atomic adds and a separate epilogue pass (three launches and two trips of C through memory).
//
// Shared tiles use the 128-byte swizzle that TMA writes and wgmma reads natively: rows of
// 128 bytes, eight rows to a 1024-byte atom, 16-byte chunk c of row r at chunk c ^ (r % 8). A
// k32 step inside a stage is a 32-byte advance of the descriptor's start address. Edges (M, N
// not multiples of the tile, K not a multiple of 128) come back from TMA as zeros.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "check.h"
#include "kernels/epilogue.cuh"
#include "kernels/gemm_mma.cuh"
#include "kernels/ptx.cuh"
#include "qforge/error.h"

namespace qforge::cuda {
namespace {

constexpr int kBM = 128, kBN = 256, kBK = 128, kStages = 4;
constexpr int kABytes = kBM * kBK, kBBytes = kBN * kBK, kStageBytes = kABytes + kBBytes;
constexpr int kThreads = 384;
[[maybe_unused]] constexpr int kConsumerThreads = 256;  // device code only
constexpr int kTileInts = kBM * kBN;  // one partial slot: 128 accumulators per consumer thread
constexpr int kSmem = kStages * kStageBytes + 1024 /* alignment slack */ + 2 * kStages * 8;

// The device code exists in the sm_90a pass only (the kernel is empty elsewhere).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// ---- mbarrier, TMA and wgmma wrappers (PTX ISA 8.0, sm_90) ----
__device__ __forceinline__ void mbar_init(std::uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const CUtensorMap* map, int x, int y,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads or writes across the asynchronous wgmma.
__device__ __forceinline__ void fence_accumulators(int (&d)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// Shared-memory matrix descriptor: K-major, 128-byte swizzle, 1024 bytes between 8-row groups.
__device__ __forceinline__ std::uint64_t smem_desc(std::uint32_t addr) {
  std::uint64_t d = 0;
  d |= static_cast<std::uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<std::uint64_t>(1) << 16;          // leading byte offset (unused when swizzled)
  d |= static_cast<std::uint64_t>(1024 >> 4) << 32;  // stride byte offset
  d |= static_cast<std::uint64_t>(1) << 62;          // SWIZZLE_128B
  return d;
}

// d += A * B for one m64n256k32 int8 tile: A and B from shared memory (descriptors), d the
// warpgroup's 64x256 int32 accumulators (128 registers per thread). scale_d = 0 overwrites d.
__device__ __forceinline__ void wgmma_m64n256k32_s8(int (&d)[128], std::uint64_t desc_a,
                                                    std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
      "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
      "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
      "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
      "%123, %124, %125, %126, %127}, "
      "%128, %129, p;\n"
      "}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
        "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
        "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]),
        "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]),
        "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]),
        "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
        "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
        "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]),
        "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]),
        "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]),
        "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]),
        "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]),
        "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]),
        "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]),
        "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]),
        "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]),
        "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]), "+r"(d[120]), "+r"(d[121]),
        "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// Barrier 1 joins the two consumer warpgroups only (the producer is elsewhere).
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");
}

__device__ __forceinline__ void tile_of(int tile, int tiles_m, int tiles_n, int& tm, int& tn) {
  constexpr int kGroup = 8;
  const int per_group = kGroup * tiles_n;
  const int first_m = (tile / per_group) * kGroup;
  const int group_m = min(tiles_m - first_m, kGroup);
  tm = first_m + (tile % per_group) % group_m;
  tn = (tile % per_group) / group_m;
}

#endif  // sm_90a

__global__ void __launch_bounds__(kThreads, 1)
    s8_gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a,
                         const __grid_constant__ CUtensorMap map_b, GemmOperands op,
                         const __grid_constant__ Epilogue ep, int splits,
                         int* __restrict__ partials, int* __restrict__ counters) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) std::uint8_t smem[];
  __shared__ int last_of_tile;
  const std::uint32_t base = (dev::smem_addr(smem) + 1023u) & ~1023u;
  const std::uint32_t full = base + kStages * kStageBytes;
  const std::uint32_t empty = full + kStages * 8;
  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full + s * 8, 1);
      mbar_init(empty + s * 8, 8);  // lane 0 of each of the 8 consumer warps
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();

  const int tiles_m = static_cast<int>((op.m + kBM - 1) / kBM);
  const int tiles_n = static_cast<int>((op.n + kBN - 1) / kBN);
  const int tiles = tiles_m * tiles_n;
  const int k_tiles = static_cast<int>((op.kp + kBK - 1) / kBK);
  // Work item w: tile w / splits, K tiles [k_begin, k_end) of split w % splits. With splits > 1
  // the epilogue adds raw partial sums into an int32 workspace (EpilogueKind::accumulate).
  const int per_split = (k_tiles + splits - 1) / splits;
  const int items = tiles * splits;

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      int it = 0;
      for (int w = blockIdx.x; w < items; w += gridDim.x) {
        const int tile = w / splits, k_begin = (w % splits) * per_split;
        const int k_count = max(0, min(k_tiles, k_begin + per_split) - k_begin);  // 0 past the end
        int tm, tn;
        tile_of(tile, tiles_m, tiles_n, tm, tn);
        const int rot = op.k_rotate && k_count > 0 ? tile % k_count : 0;
        for (int kt = 0; kt < k_count; ++kt, ++it) {
          const int s = it % kStages;
          const int k = k_begin + (kt + rot) % k_count;  // see GemmOperands::k_rotate
          if (it >= kStages) mbar_wait(empty + s * 8, ((it / kStages) - 1) & 1);
          mbar_arrive_expect_tx(full + s * 8, kStageBytes);
          tma_load_2d(base + s * kStageBytes, &map_a, k * kBK, tm * kBM, full + s * 8);
          tma_load_2d(base + s * kStageBytes + kABytes, &map_b, k * kBK, tn * kBN, full + s * 8);
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int consumer = wg - 1;
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    int acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0;
    int it = 0;
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
      const int tile = w / splits, k_begin = (w % splits) * per_split;
      const int k_count = max(0, min(k_tiles, k_begin + per_split) - k_begin);  // 0 past the end
      int tm, tn;
      tile_of(tile, tiles_m, tiles_n, tm, tn);
      for (int kt = 0; kt < k_count; ++kt, ++it) {
        const int s = it % kStages;
        mbar_wait(full + s * 8, (it / kStages) & 1);
        const std::uint64_t da = smem_desc(base + s * kStageBytes + consumer * 64 * kBK);
        const std::uint64_t db = smem_desc(base + s * kStageBytes + kABytes);
        fence_accumulators(acc);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < kBK / 32; ++ks)  // +32 bytes = +2 in the descriptor's address field
          wgmma_m64n256k32_s8(acc, da + 2 * ks, db + 2 * ks, (kt > 0 || ks > 0) ? 1 : 0);
        wgmma_commit();
        wgmma_wait<1>();  // the previous stage's wgmmas are done: hand it back
        fence_accumulators(acc);
        if (kt > 0 && lane == 0) mbar_arrive(empty + ((it - 1) % kStages) * 8);
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      if (k_count > 0 && lane == 0) mbar_arrive(empty + ((it - 1) % kStages) * 8);
      if (k_count == 0) {
#pragma unroll
        for (int i = 0; i < 128; ++i) acc[i] = 0;
      }
      if (splits > 1) {
        const int ct = threadIdx.x - 128;
        int4* slots = reinterpret_cast<int4*>(partials);
        int4* mine = slots + static_cast<std::int64_t>(w) * (kTileInts / 4);
#pragma unroll
        for (int i = 0; i < 32; ++i)
          __stcg(mine + i * kConsumerThreads + ct,
                 make_int4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
        __threadfence();
        consumers_sync();
        if (ct == 0) {
          const bool last = atomicAdd(counters + tile, 1) == splits - 1;
          if (last) counters[tile] = 0;  // ready for the next launch
          last_of_tile = last;
        }
        consumers_sync();
        const bool last = last_of_tile;
        consumers_sync();  // everyone has read the flag before the next item writes it
        if (!last) continue;
        __threadfence();
        for (int sp = 0; sp < splits; ++sp) {
          if (sp == w % splits) continue;
          const int4* other =
              slots + (static_cast<std::int64_t>(tile) * splits + sp) * (kTileInts / 4);
#pragma unroll
          for (int i = 0; i < 32; ++i) {
            const int4 v = __ldcg(other + i * kConsumerThreads + ct);
            acc[4 * i] += v.x;
            acc[4 * i + 1] += v.y;
            acc[4 * i + 2] += v.z;
            acc[4 * i + 3] += v.w;
          }
        }
      }

      // Accumulator layout: for each n8 column block j, acc[4j], acc[4j+1] at (row g, cols 2t,
      // 2t+1) and acc[4j+2], acc[4j+3] at row g + 8, within the warp's 16 rows.
      const std::int64_t row =
          static_cast<std::int64_t>(tm) * kBM + consumer * 64 + warp * 16 + lane / 4;
      const std::int64_t col0 = static_cast<std::int64_t>(tn) * kBN + (lane % 4) * 2;
      dev::store_fragment<2, 32>(
          ep, [&](int r) { return row + 8 * r; }, [&](int c) { return col0 + 8 * c; },
          [&](int r, int c, int h) { return acc[4 * c + 2 * r + h]; });
      fence_accumulators(acc);  // the next item's first wgmma overwrites them
    }
  }
#endif
}

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                           &q),
          "cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)");
    if (q != cudaDriverEntryPointSuccess || p == nullptr)
      throw Error(ErrorCode::backend, "cuTensorMapEncodeTiled: not provided by this driver");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// A [rows, kp] int8 K-major matrix, boxes of box_rows x 128 bytes, 128-byte swizzle.
CUtensorMap make_map(const std::int8_t* data, std::int64_t rows, std::int64_t kp, std::int64_t ld,
                     int box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(kp), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kBK), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = encode_fn()(
      &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<std::int8_t*>(data), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(ErrorCode::backend,
                "cuTensorMapEncodeTiled: error " + std::to_string(static_cast<int>(r)) + " for a " +
                    std::to_string(rows) + " x " + std::to_string(kp) + " int8 matrix");
  return map;
}

struct DeviceState {
  bool checked = false;
  bool available = false;
  int multiprocessors = 0;
};

DeviceState& state_of(int device) {
  static DeviceState states[64];
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  DeviceState& st = states[device >= 0 && device < 64 ? device : 0];
  if (!st.checked) {
    st.checked = true;
    cudaSetDevice(device);
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    cudaDeviceGetAttribute(&st.multiprocessors, cudaDevAttrMultiProcessorCount, device);
    // The sm_90a image must be the one the runtime picked (its body is empty elsewhere).
    cudaFuncAttributes attr{};
    const bool image = cudaFuncGetAttributes(&attr, s8_gemm_wgmma_kernel) == cudaSuccess &&
                       attr.binaryVersion == 90;
    cudaGetLastError();
    st.available =
        major == 9 && minor == 0 && image &&
        cudaFuncSetAttribute(s8_gemm_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmem) == cudaSuccess;
    cudaGetLastError();
  }
  return st;
}

}  // namespace

bool wgmma_available(int device) { return state_of(device).available; }

int wgmma_splits(std::int64_t m, std::int64_t n, std::int64_t kp, int multiprocessors) {
  // Few tiles (skinny M): split K so that every SM gets a work item, each at least 8 K tiles
  // (1024 bytes of every row) long so that the pipeline fills.
  const std::int64_t tiles = ((m + kBM - 1) / kBM) * ((n + kBN - 1) / kBN);
  const std::int64_t k_tiles = (kp + kBK - 1) / kBK;
  // QFORGE_CUDA_WGMMA_SPLITS=S (an experiment switch, read at every launch) forces S splits.
  if (const char* env = std::getenv("QFORGE_CUDA_WGMMA_SPLITS");
      env != nullptr && std::atoi(env) > 0)
    return std::min(std::atoi(env), 64);  // more splits than K tiles leave some empty: still exact
  if (tiles >= multiprocessors) return 1;
  return static_cast<int>(
      std::clamp<std::int64_t>(std::min(multiprocessors / tiles, k_tiles / 8), 1, 16));
}

std::int64_t wgmma_split_workspace_ints(std::int64_t m, std::int64_t n, int splits) {
  return wgmma_tiles(m, n) * splits * kTileInts;
}

std::int64_t wgmma_tiles(std::int64_t m, std::int64_t n) {
  return ((m + kBM - 1) / kBM) * ((n + kBN - 1) / kBN);
}

bool launch_gemm_wgmma(const GemmOperands& op, const Epilogue& ep, int splits, int* partials,
                       int* counters, int device, cudaStream_t stream) {
  const DeviceState& st = state_of(device);
  if (!st.available || op.kp == 0) return false;
  const CUtensorMap map_a = make_map(op.a, op.m, op.kp, op.lda, kBM);
  const CUtensorMap map_b = make_map(op.b, op.n, op.kp, op.ldb, kBN);
  const std::int64_t tiles = ((op.m + kBM - 1) / kBM) * ((op.n + kBN - 1) / kBN);
  const int grid = static_cast<int>(std::min<std::int64_t>(tiles * splits, st.multiprocessors));
  if (splits > 1 && (partials == nullptr || counters == nullptr))
    throw Error(ErrorCode::backend,
                "s8_gemm_wgmma: split-K needs its partial slots and tile counters");
  s8_gemm_wgmma_kernel<<<grid, kThreads, kSmem, stream>>>(map_a, map_b, op, ep, splits, partials,
                                                          counters);
  check_launch("s8_gemm_wgmma_kernel");
  return true;
}

}  // namespace qforge::cuda
