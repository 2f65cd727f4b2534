#include "workspace.h"

#include "check.h"

namespace qforge::cuda {

void* Workspace::get(Slot slot, std::size_t bytes, int device, cudaStream_t stream) {
  auto& buffer = slots_[static_cast<std::size_t>(slot)];
  if (bytes == 0) bytes = 1;
  if (!buffer || buffer->size() < bytes) {
    if (buffer) check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    buffer.reset();
    // Half again as much as asked, so that slowly growing shapes do not reallocate every call.
    buffer = std::make_unique<DeviceBuffer>(bytes + bytes / 2, device);
  }
  return buffer->data();
}

void Workspace::clear() noexcept {
  for (auto& b : slots_) b.reset();
}

}  // namespace qforge::cuda
