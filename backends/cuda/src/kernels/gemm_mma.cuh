// The mma.sync int8 GEMM (sm_80+), declared for gemm_mma.cu and the dispatcher.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/gemm.h"

namespace qforge::cuda {

void launch_gemm_mma(GemmKernel kernel, const GemmOperands& op, const Epilogue& ep, int splits,
                     int device, cudaStream_t stream);
// The skinny-M kernel (gemm_skinny.cu); splits > 1: K also split across CTAs, ep of kind
// accumulate.
void launch_gemm_skinny(const GemmOperands& op, const Epilogue& ep, int splits, int device,
                        cudaStream_t stream);
int skinny_splits(std::int64_t m, std::int64_t n, std::int64_t kp, int multiprocessors);
void launch_gemm_dp4a(const GemmOperands& op, const Epilogue& ep, cudaStream_t stream);
// Hopper only: whether the sm_90a wgmma kernel runs on `device`, and launching it (false
// when it cannot: another GPU, or K == 0).
bool wgmma_available(int device);
// splits > 1: K split in that many pieces, reduced in the kernel through `partials`
// (wgmma_split_workspace_ints of them) and one zeroed counter per tile; ep is the real epilogue.
bool launch_gemm_wgmma(const GemmOperands& op, const Epilogue& ep, int splits, int* partials,
                       int* counters, int device, cudaStream_t stream);
std::int64_t wgmma_tiles(std::int64_t m, std::int64_t n);
std::int64_t wgmma_split_workspace_ints(std::int64_t m, std::int64_t n, int splits);
int wgmma_splits(std::int64_t m, std::int64_t n, std::int64_t kp, int multiprocessors);
void launch_epilogue(const std::int32_t* c, const Epilogue& ep, cudaStream_t stream);

}  // namespace qforge::cuda
