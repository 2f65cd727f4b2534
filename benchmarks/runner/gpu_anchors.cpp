#include "gpu_anchors.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "cublaslt_library.h"

namespace qforge::bench {
namespace {

// Owns what one measurement allocates, so every early return frees it.
struct LtResources {
  const CublasLtLibrary* lt = nullptr;  // set before any cuBLASLt object is created
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  void *a = nullptr, *b = nullptr, *c = nullptr, *workspace = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~LtResources() {
    if (pref) lt->preference_destroy(pref);
    if (la) lt->layout_destroy(la);
    if (lb) lt->layout_destroy(lb);
    if (lc) lt->layout_destroy(lc);
    if (desc) lt->desc_destroy(desc);
    if (handle) lt->destroy(handle);
    for (void* p : {a, b, c, workspace})
      if (p) cudaFree(p);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

// Median seconds of CUDA-event timed calls of fn after warm-up; nullopt when a call fails.
template <class F>
std::optional<double> median_event_seconds(F&& fn, cudaEvent_t start, cudaEvent_t stop) {
  for (int i = 0; i < 3; ++i)
    if (!fn()) return std::nullopt;
  std::vector<float> ms;
  for (int i = 0; i < 15; ++i) {
    cudaEventRecord(start, nullptr);
    fn();
    cudaEventRecord(stop, nullptr);
    if (cudaEventSynchronize(stop) != cudaSuccess) return std::nullopt;
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2] * 1e-3;
}

bool cuda_device_present() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

}  // namespace

std::optional<Anchor> cuda_copy_anchor(double bytes_moved) {
  if (!cuda_device_present()) return std::nullopt;
  LtResources r;  // only its buffers and events are used
  const auto n = static_cast<std::size_t>(std::max(bytes_moved / 2, 1.0));
  if (cudaMalloc(&r.a, n) != cudaSuccess || cudaMalloc(&r.b, n) != cudaSuccess ||
      cudaEventCreate(&r.start) != cudaSuccess || cudaEventCreate(&r.stop) != cudaSuccess)
    return std::nullopt;
  const auto s = median_event_seconds(
      [&] {
        return cudaMemcpyAsync(r.b, r.a, n, cudaMemcpyDeviceToDevice, nullptr) == cudaSuccess;
      },
      r.start, r.stop);
  if (!s) return std::nullopt;
  return Anchor{"cuda d2d copy", *s};
}

std::optional<Anchor> cublaslt_anchor(std::int64_t m, std::int64_t n, std::int64_t k) {
  if (!cuda_device_present() || m <= 0 || n <= 0 || k <= 0) return std::nullopt;
  const CublasLtLibrary* lt = cublaslt_library();
  if (lt == nullptr) return std::nullopt;
  LtResources r;
  r.lt = lt;
  const std::size_t ws_bytes = std::size_t{64} << 20;
  if (cudaMalloc(&r.a, static_cast<std::size_t>(m * k)) != cudaSuccess ||
      cudaMalloc(&r.b, static_cast<std::size_t>(n * k)) != cudaSuccess ||
      cudaMalloc(&r.c, static_cast<std::size_t>(m * n) * 4) != cudaSuccess ||
      cudaMalloc(&r.workspace, ws_bytes) != cudaSuccess)
    return std::nullopt;
  cudaMemset(r.a, 1, static_cast<std::size_t>(m * k));
  cudaMemset(r.b, 1, static_cast<std::size_t>(n * k));
  // Row-major C = A B^T is column-major C^T = B A^T: cuBLASLt's "TN" int8 case, with B as the
  // first operand (k x n, transposed) and A as the second (k x m).
  if (lt->create(&r.handle) != CUBLAS_STATUS_SUCCESS ||
      lt->desc_create(&r.desc, CUBLAS_COMPUTE_32I, CUDA_R_32I) != CUBLAS_STATUS_SUCCESS)
    return std::nullopt;
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  lt->desc_set_attribute(r.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a);
  lt->desc_set_attribute(r.desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b);
  if (lt->layout_create(&r.la, CUDA_R_8I, k, n, k) != CUBLAS_STATUS_SUCCESS ||
      lt->layout_create(&r.lb, CUDA_R_8I, k, m, k) != CUBLAS_STATUS_SUCCESS ||
      lt->layout_create(&r.lc, CUDA_R_32I, n, m, n) != CUBLAS_STATUS_SUCCESS ||
      lt->preference_create(&r.pref) != CUBLAS_STATUS_SUCCESS)
    return std::nullopt;
  lt->preference_set_attribute(r.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                               sizeof ws_bytes);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (lt->algo_get_heuristic(r.handle, r.desc, r.la, r.lb, r.lc, r.lc, r.pref, 1, &heuristic,
                             &found) != CUBLAS_STATUS_SUCCESS ||
      found == 0)
    return std::nullopt;
  const std::int32_t alpha = 1, beta = 0;
  auto run = [&] {
    return lt->matmul(r.handle, r.desc, &alpha, r.b, r.la, r.a, r.lb, &beta, r.c, r.lc, r.c, r.lc,
                      &heuristic.algo, r.workspace, ws_bytes, nullptr);
  };
  if (cudaEventCreate(&r.start) != cudaSuccess || cudaEventCreate(&r.stop) != cudaSuccess)
    return std::nullopt;
  const auto s =
      median_event_seconds([&] { return run() == CUBLAS_STATUS_SUCCESS; }, r.start, r.stop);
  if (!s) return std::nullopt;
  return Anchor{"cublaslt int8", *s};
}

}  // namespace qforge::bench
