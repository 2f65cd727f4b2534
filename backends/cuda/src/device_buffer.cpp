#include "device_buffer.h"

#include <cuda_runtime_api.h>

#include <string>

#include "check.h"
#include "qforge/error.h"

namespace qforge::cuda {

DeviceBuffer::DeviceBuffer(std::size_t bytes, int device) : bytes_(bytes), device_(device) {
  if (bytes == 0) return;
  check(cudaSetDevice(device), "cudaSetDevice");
  const cudaError_t status = cudaMalloc(&data_, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw Error(ErrorCode::backend,
                "cudaMalloc of " + std::to_string(bytes) + " bytes: " + cudaGetErrorString(status));
  }
}

DeviceBuffer::~DeviceBuffer() {
  // A destructor cannot report; a failing cudaFree here means the context is already gone.
  if (data_) cudaFree(data_);
}

}  // namespace qforge::cuda
