// Device memory of the CUDA backend: plain cudaMalloc (never managed memory, which on shared
// machines can hang the GPU when oversubscribed), freed with cudaFree. Buffers never move; the
// backend copies explicitly (copy_to_device / copy_to_host).
#pragma once

#include <cstddef>
#include <memory>

#include "qforge/tensor.h"

namespace qforge::cuda {

inline constexpr const char* kBackendName = "cuda";

class DeviceBuffer final : public Buffer {
 public:
  // Allocates `bytes` on `device` (0 bytes: no allocation, data() is null).
  DeviceBuffer(std::size_t bytes, int device);
  ~DeviceBuffer() override;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() noexcept override { return data_; }
  std::size_t size() const noexcept override { return bytes_; }
  DeviceRef device() const override { return {kBackendName, device_}; }
  bool host_accessible() const noexcept override { return false; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = 0;
};

}  // namespace qforge::cuda
