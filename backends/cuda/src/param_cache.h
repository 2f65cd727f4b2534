// Device copies of the small host arrays that descriptors carry (per-channel scales and zero
// points, fixed-point multipliers). Kernels need them in device memory; uploading them on every
// call would add a copy (microseconds) to ops that take tens of microseconds, so copies are kept
// by content: the same array asked for again returns the same device pointer.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "device_buffer.h"

namespace qforge::cuda {

class ParamCache {
 public:
  // A device pointer holding exactly these bytes, valid until clear() or until `kCapacity`
  // other arrays have been asked for since its last use.
  const void* get(const void* host, std::size_t bytes, int device, cudaStream_t stream);
  template <class T>
  const T* get(std::span<const T> host, int device, cudaStream_t stream) {
    return static_cast<const T*>(get(host.data(), host.size_bytes(), device, stream));
  }
  void clear() noexcept;

 private:
  static constexpr std::size_t kCapacity = 64;
  struct Entry {
    std::unique_ptr<DeviceBuffer> buffer;
    std::uint64_t last_use = 0;
  };
  std::unordered_map<std::string, Entry> entries_;
  std::uint64_t clock_ = 0;
  // The entry returned last: a call that asks for the same array again (the usual case: one
  // layer's scales, call after call) is answered with one memcmp, without building a key.
  const std::string* last_key_ = nullptr;
  Entry* last_ = nullptr;
};

}  // namespace qforge::cuda
