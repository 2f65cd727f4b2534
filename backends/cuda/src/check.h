// Every CUDA runtime call of the backend goes through check(): a failure becomes
// qforge::Error(ErrorCode::backend, "<call>: <CUDA's message>"), so a user reads which call
// failed and why ("cudaMalloc: out of memory") instead of a bare error number.
#pragma once

#include <cuda_runtime_api.h>

namespace qforge::cuda {

// Throws qforge::Error(ErrorCode::backend, "<call>: <cudaGetErrorString(status)>") unless
// status is cudaSuccess.
void check(cudaError_t status, const char* call);

// After a kernel launch: throws when the launch itself failed (bad configuration, no kernel
// image for this GPU). Asynchronous faults surface at the next synchronising call.
void check_launch(const char* kernel);

}  // namespace qforge::cuda
