// GPU anchors (DESIGN.md: "cuBLASLt on NVIDIA GPUs", "device-to-device copy for memory-bound
// kernels") for workloads a GPU plugin wins. Built only where the CUDA toolkit is; at run time it
// answers nullopt when no CUDA device is usable or cuBLASLt has no int8 algorithm for the shape.
#pragma once

#include <cstdint>
#include <optional>

#include "results.h"

namespace qforge::bench {

// C[m, n] int32 = A[m, k] int8 x B[n, k]^T int8 (what torch._int_mm runs; no epilogue), median
// of CUDA-event timed runs after warm-up, on device 0.
std::optional<Anchor> cublaslt_anchor(std::int64_t m, std::int64_t n, std::int64_t k);

// Device-to-device cudaMemcpy moving `bytes_moved` bytes of traffic (amount/2 copied), the
// anchor for memory-bound ops a GPU plugin wins; nullopt without a usable CUDA device.
std::optional<Anchor> cuda_copy_anchor(double bytes_moved);

}  // namespace qforge::bench
