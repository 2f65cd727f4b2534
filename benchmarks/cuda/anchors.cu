#include <cublasLt.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "anchors.h"

namespace qforge::bench {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

namespace {

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " +
                             std::to_string(static_cast<int>(status)));
}

// 16 independent accumulators per thread so that the dp4a pipeline never waits on a result;
// the inputs change every step so nothing can be hoisted, and the sum is stored at the end.
__global__ void empty_kernel() {}

__global__ void dp4a_peak_kernel(int iterations, int* out) {
  int acc[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) acc[i] = threadIdx.x + i;
  int a = static_cast<int>(threadIdx.x * 0x01020304u),
      b = static_cast<int>(blockIdx.x * 0x05060708u + 1);
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int i = 0; i < 16; ++i) acc[i] = __dp4a(a, b ^ i, acc[i]);
    a += 0x01010101;
  }
  int s = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) s += acc[i];
  if (s == 0x7fffffff) out[0] = s;  // practically never; keeps the loop alive
}

// 8 independent m16n8k32 accumulators per warp.
__global__ void mma_peak_kernel(int iterations, int* out) {
  unsigned a[4] = {threadIdx.x, threadIdx.x * 3u, threadIdx.x * 5u, threadIdx.x * 7u};
  unsigned b[2] = {blockIdx.x, blockIdx.x * 11u};
  int c[8][4] = {};
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int j = 0; j < 8; ++j)
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+r"(c[j][0]), "+r"(c[j][1]), "+r"(c[j][2]), "+r"(c[j][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  int s = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == 0x7fffffff) out[0] = s;
}

}  // namespace

float cublaslt_s8_gemm_ms(const std::int8_t* a, const std::int8_t* b, std::int32_t* c, int m, int n,
                          int k, int reps) {
  // Row-major C[m, n] = A[m, k] B[n, k]^T is, column-major, C^T[n, m] = B^T ... i.e. the "TN"
  // int8 GEMM cuBLASLt serves: op(A') = (B as k x n, ld k)^T, op(B') = A as k x m (ld k).
  cublasLtHandle_t handle;
  check_lt(cublasLtCreate(&handle), "cublasLtCreate");
  cublasLtMatmulDesc_t desc;
  check_lt(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32I, CUDA_R_32I),
           "cublasLtMatmulDescCreate");
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  check_lt(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a),
      "TRANSA");
  check_lt(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b),
      "TRANSB");
  cublasLtMatrixLayout_t la, lb, lc;
  check_lt(cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, k, n, k), "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, k, m, k), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32I, n, m, n), "layout C");
  cublasLtMatmulPreference_t pref;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
  std::size_t ws_bytes = 64u << 20;
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws_bytes, sizeof ws_bytes),
           "workspace preference");
  void* ws = nullptr;
  check_cuda(cudaMalloc(&ws, ws_bytes), "cudaMalloc(cuBLASLt workspace)");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, lc, lc, pref, 1, &heuristic, &found);
  float ms = -1.0f;
  if (hs == CUBLAS_STATUS_SUCCESS && found > 0) {
    const std::int32_t alpha = 1, beta = 0;
    ms = time_ms(
        [&] {
          check_lt(cublasLtMatmul(handle, desc, &alpha, b, la, a, lb, &beta, c, lc, c, lc,
                                  &heuristic.algo, ws, ws_bytes, nullptr),
                   "cublasLtMatmul");
        },
        3, reps);
  }
  cudaFree(ws);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(handle);
  return ms;
}

double d2d_copy_gbps(void* dst, const void* src, std::size_t bytes, int reps) {
  const float ms = time_ms(
      [&] {
        check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr),
                   "cudaMemcpyAsync");
      },
      3, reps);
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

HostCosts host_costs(int calls) {
  HostCosts c;
  auto per_call_us = [&](auto&& fn) {
    for (int i = 0; i < 10; ++i) fn();
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return host_us_per_call(fn, calls);
  };
  c.launch_us = per_call_us([] { empty_kernel<<<1, 32>>>(); });
  c.set_device_us = per_call_us([] { check_cuda(cudaSetDevice(0), "cudaSetDevice"); });
  c.get_last_error_us = per_call_us([] { check_cuda(cudaGetLastError(), "cudaGetLastError"); });
  return c;
}

double dp4a_peak_tops(int multiprocessors) {
  int* out = nullptr;
  check_cuda(cudaMalloc(&out, sizeof(int)), "cudaMalloc");
  const int iterations = 4096, threads = 256, blocks = multiprocessors * 8;
  const float ms = time_ms([&] { dp4a_peak_kernel<<<blocks, threads>>>(iterations, out); }, 2, 7);
  check_cuda(cudaGetLastError(), "dp4a_peak_kernel");
  cudaFree(out);
  const double ops = 2.0 * 4.0 * 16.0 * iterations * threads * static_cast<double>(blocks);
  return ops / (ms * 1e-3) / 1e12;
}

double mma_peak_tops(int multiprocessors) {
  int* out = nullptr;
  check_cuda(cudaMalloc(&out, sizeof(int)), "cudaMalloc");
  const int iterations = 2048, threads = 256, blocks = multiprocessors * 4;
  const float ms = time_ms([&] { mma_peak_kernel<<<blocks, threads>>>(iterations, out); }, 2, 7);
  check_cuda(cudaGetLastError(), "mma_peak_kernel");
  cudaFree(out);
  const double ops =
      2.0 * 16 * 8 * 32 * 8.0 * iterations * (threads / 32) * static_cast<double>(blocks);
  return ops / (ms * 1e-3) / 1e12;
}

}  // namespace qforge::bench
