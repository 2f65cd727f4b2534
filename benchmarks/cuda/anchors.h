// The anchors the CUDA backend's figures are measured against, in the same run (DESIGN.md,
// "Performance method"): cuBLASLt's int8 GEMM (int32 out, no epilogue: what torch._int_mm
// calls), device-to-device copy bandwidth, and register-only peak loops of __dp4a and of
// mma.sync int8 (no memory traffic: the instruction's ceiling on this GPU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace qforge::bench {

// Median milliseconds of `reps` runs of fn() after `warmup` runs, timed with CUDA events on the
// legacy default stream (which orders against the plugin's blocking stream).
template <class F>
float time_ms(F&& fn, int warmup, int reps);
// Host microseconds per call of fn() over `calls` calls, enqueueing only (the device is
// synchronised after the clock stops).
template <class F>
double host_us_per_call(F&& fn, int calls);

// C[m, n] (int32, row-major) = A[m, k] (int8 row-major) * B[n, k]^T via cublasLtMatmul.
// Returns the median ms, or a negative value when cuBLASLt has no algorithm for the shape.
float cublaslt_s8_gemm_ms(const std::int8_t* a, const std::int8_t* b, std::int32_t* c, int m, int n,
                          int k, int reps);
// Bytes moved per second (read + write) by cudaMemcpyAsync device to device of `bytes`.
double d2d_copy_gbps(void* dst, const void* src, std::size_t bytes, int reps);
// Tera-ops per second (2 per multiply-add) of a register-only __dp4a loop filling the GPU.
double dp4a_peak_tops(int multiprocessors);
// Same for mma.sync.m16n8k32 s8 (sm_80+).
double mma_peak_tops(int multiprocessors);

// Host microseconds per call, enqueueing only: an empty kernel launch, cudaSetDevice,
// cudaGetLastError (the floor under any op's host time).
struct HostCosts {
  double launch_us = 0, set_device_us = 0, get_last_error_us = 0;
};
HostCosts host_costs(int calls);

void check_cuda(cudaError_t status, const char* what);

}  // namespace qforge::bench

#include "timing.inl"
