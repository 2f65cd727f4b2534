#include "cublaslt_library.h"

#include <dlfcn.h>

namespace qforge::bench {
namespace {

template <class F>
bool resolve(void* library, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(library, name));
  return fn != nullptr;
}

const CublasLtLibrary* open_library() {
  // Never closed: the anchors' handles may outlive any scope that could close it.
  void* library = dlopen(QFORGE_BENCH_CUBLASLT_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return nullptr;
  static CublasLtLibrary lt;
  const bool all =
      resolve(library, "cublasLtCreate", lt.create) &&
      resolve(library, "cublasLtDestroy", lt.destroy) &&
      resolve(library, "cublasLtMatmul", lt.matmul) &&
      resolve(library, "cublasLtMatmulAlgoGetHeuristic", lt.algo_get_heuristic) &&
      resolve(library, "cublasLtMatmulDescCreate", lt.desc_create) &&
      resolve(library, "cublasLtMatmulDescDestroy", lt.desc_destroy) &&
      resolve(library, "cublasLtMatmulDescSetAttribute", lt.desc_set_attribute) &&
      resolve(library, "cublasLtMatmulPreferenceCreate", lt.preference_create) &&
      resolve(library, "cublasLtMatmulPreferenceDestroy", lt.preference_destroy) &&
      resolve(library, "cublasLtMatmulPreferenceSetAttribute", lt.preference_set_attribute) &&
      resolve(library, "cublasLtMatrixLayoutCreate", lt.layout_create) &&
      resolve(library, "cublasLtMatrixLayoutDestroy", lt.layout_destroy);
  return all ? &lt : nullptr;
}

}  // namespace

const CublasLtLibrary* cublaslt_library() {
  static const CublasLtLibrary* const lt = open_library();
  return lt;
}

}  // namespace qforge::bench
