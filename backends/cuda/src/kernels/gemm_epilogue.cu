// The GEMM dispatcher and the stand-alone epilogue that finishes split-K sums.
#include <algorithm>
#include <cstdlib>

#include "check.h"
#include "kernels/epilogue.cuh"
#include "kernels/gemm_mma.cuh"
#include "qforge/error.h"

namespace qforge::cuda {
namespace {

// One thread per column pair of one row.
__global__ void __launch_bounds__(256)
    epilogue_kernel(const std::int32_t* __restrict__ c, const __grid_constant__ Epilogue ep) {
  const std::int64_t pairs_per_row = (ep.n + 1) / 2;
  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pairs_per_row * ep.m) return;
  const std::int64_t m = p / pairs_per_row, n = (p % pairs_per_row) * 2;
  const std::int32_t r0 = c[m * ep.n + n];
  const std::int32_t r1 = n + 1 < ep.n ? c[m * ep.n + n + 1] : 0;
  dev::store_pair(ep, m, n, r0, r1);
}

}  // namespace

FastPath fast_path_of(const Epilogue& ep) {
  if (ep.kind == EpilogueKind::accumulate) return FastPath::acc;  // raw sums, never compensated
  if (!ep.paired || ep.a_rowsum || ep.b_colsum) return FastPath::none;
  if (ep.kind == EpilogueKind::int32_out) return FastPath::i32;
  if (ep.kind != EpilogueKind::float_out) return FastPath::none;
  return ep.out_type == FloatType::f32   ? FastPath::f32
         : ep.out_type == FloatType::f16 ? FastPath::f16
                                         : FastPath::bf16;
}

void launch_epilogue(const std::int32_t* c, const Epilogue& ep_in, cudaStream_t stream) {
  const std::int64_t pairs = ep_in.m * ((ep_in.n + 1) / 2);
  if (pairs == 0) return;
  Epilogue ep = ep_in;
  ep.fast = fast_path_of(ep);
  epilogue_kernel<<<static_cast<unsigned>((pairs + 255) / 256), 256, 0, stream>>>(c, ep);
  check_launch("epilogue_kernel");
}

SplitWorkspace split_workspace(GemmKernel kernel, std::int64_t m, std::int64_t n, int splits) {
  if (splits <= 1) return {};
  if (kernel == GemmKernel::wgmma_128x256)
    return {wgmma_split_workspace_ints(m, n, splits), wgmma_tiles(m, n)};
  return {m * n, 0};
}

int choose_splits(GemmKernel kernel, std::int64_t m, std::int64_t n, std::int64_t kp,
                  int multiprocessors) {
  if (kernel == GemmKernel::wgmma_128x256) return wgmma_splits(m, n, kp, multiprocessors);
  if (kernel == GemmKernel::mma_skinny) return skinny_splits(m, n, kp, multiprocessors);
  if (kernel != GemmKernel::mma_32x128) return 1;
  // Skinny M streams B once: split K until about two CTAs per SM are busy, keeping at least
  // 4 K-tiles (256 bytes of each B row) per CTA so that the pipeline fills.
  const std::int64_t tiles = ((m + 31) / 32) * ((n + 127) / 128);
  const std::int64_t k_tiles = (kp + 63) / 64;
  const std::int64_t want = (2 * std::max(1, multiprocessors) + tiles - 1) / tiles;
  return static_cast<int>(std::clamp<std::int64_t>(std::min(want, k_tiles / 4), 1, 64));
}

void launch_gemm(const GemmLaunch& how, const GemmOperands& op_in, const Epilogue& ep_in,
                 cudaStream_t stream) {
  if (op_in.m == 0 || op_in.n == 0) return;
  Epilogue ep = ep_in;
  ep.fast = fast_path_of(ep);
  GemmOperands op = op_in;
  // QFORGE_CUDA_GEMM_KROTATE=1 turns on the K rotation (GemmOperands::k_rotate).
  if (const char* env = std::getenv("QFORGE_CUDA_GEMM_KROTATE"); env != nullptr)
    op.k_rotate = env[0] == '1';
  if (how.kernel == GemmKernel::dp4a_128x128) {
    launch_gemm_dp4a(op, ep, stream);
    return;
  }
  if (how.kernel == GemmKernel::wgmma_128x256) {  // reduces its own splits
    const int splits = how.workspace != nullptr && how.counters != nullptr ? how.splits : 1;
    if (!launch_gemm_wgmma(op, ep, splits, how.workspace, how.counters, how.device, stream))
      throw Error(ErrorCode::unsupported,
                  "s8_gemm_wgmma: needs an sm_90 GPU running this build's "
                  "sm_90a image and K > 0");
    return;
  }
  auto run = [&](const Epilogue& e, int splits) {
    if (how.kernel == GemmKernel::mma_skinny) {
      launch_gemm_skinny(op, e, splits, how.device, stream);
    } else {
      launch_gemm_mma(how.kernel, op, e, splits, how.device, stream);
    }
  };
  if (how.splits <= 1 || how.workspace == nullptr) {
    run(ep, 1);
    return;
  }
  // Split-K: raw partial sums meet in an int32 workspace (integer addition is exact and
  // order-free), then one pass applies the epilogue.
  check(cudaMemsetAsync(how.workspace, 0,
                        static_cast<std::size_t>(op.m * op.n) * sizeof(std::int32_t), stream),
        "cudaMemsetAsync(split-K workspace)");
  Epilogue partial;
  partial.kind = EpilogueKind::accumulate;
  partial.out = how.workspace;
  partial.ldc = op.n;
  partial.m = op.m;
  partial.n = op.n;
  partial.k = op.k;
  partial.fast = fast_path_of(partial);
  run(partial, how.splits);
  launch_epilogue(how.workspace, ep_in, stream);
}

}  // namespace qforge::cuda
