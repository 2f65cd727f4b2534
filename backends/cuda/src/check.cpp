#include "check.h"

#include <string>

#include "qforge/error.h"

namespace qforge::cuda {

void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw Error(ErrorCode::backend, std::string(call) + ": " + cudaGetErrorString(status));
}

void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  throw Error(ErrorCode::backend,
              std::string("launch of ") + kernel + ": " + cudaGetErrorString(status));
}

}  // namespace qforge::cuda
