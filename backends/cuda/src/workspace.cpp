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

void* Workspace::get_zeroed(Slot slot, std::size_t bytes, int device, cudaStream_t stream) {
  // A slot only grows, so a (re)allocation shows as a new size.
  const auto& buffer = slots_[static_cast<std::size_t>(slot)];
  const std::size_t size_before = buffer ? buffer->size() : 0;
  void* p = get(slot, bytes, device, stream);
  if (buffer->size() != size_before)
    check(cudaMemsetAsync(p, 0, buffer->size(), stream), "cudaMemsetAsync(workspace)");
  return p;
}

void Workspace::clear() noexcept {
  for (auto& b : slots_) b.reset();
}

}  // namespace qforge::cuda
