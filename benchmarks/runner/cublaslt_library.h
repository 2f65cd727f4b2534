// cuBLASLt opened with dlopen at the first GPU anchor, not linked: the library is half a
// gigabyte, and loading it at start-up cost every `qforge` command (quantize, run, eval) about
// 80 ms of its start on the development machine (docs/PERFORMANCE.md, "branch fmnist2t").
#pragma once

#include <cublasLt.h>

namespace qforge::bench {

// The cuBLASLt entry points the anchors call, resolved from one dlopen of the library's soname
// (QFORGE_BENCH_CUBLASLT_SONAME, from the toolkit found at configure time).
struct CublasLtLibrary {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set_attribute = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set_attribute = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
};

// The library, opened on the first call (thread-safe); nullptr when it or one of its entry
// points is missing (then there is no cuBLASLt anchor, as without a CUDA device).
const CublasLtLibrary* cublaslt_library();

}  // namespace qforge::bench
