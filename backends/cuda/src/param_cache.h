// Device copies of the small host arrays that descriptors carry (per-channel scales and zero
// points, fixed-point multipliers). Kernels need them in device memory; uploading them on every
// call would add a copy (microseconds) to ops that take tens of microseconds, so copies are kept
// by content: the same array asked for again returns the same device pointer. A non-zero `tag`
// (from QuantizationParams::identity(): equal tags mean equal contents) finds an array seen
// before without comparing it: block-wise params carry N * K / block scales (8 MB for an
// 8192 x 8192 int4 B in blocks of 32), whose comparison and hashing cost a millisecond per call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "device_buffer.h"

namespace qforge::cuda {

class ParamCache {
 public:
  // A device pointer holding exactly these bytes, valid until clear() or until `kCapacity`
  // other arrays have been asked for since its last use.
  const void* get(const void* host, std::size_t bytes, std::uint64_t tag, int device,
                  cudaStream_t stream);
  template <class T>
  const T* get(std::span<const T> host, std::uint64_t tag, int device, cudaStream_t stream) {
    return static_cast<const T*>(get(host.data(), host.size_bytes(), tag, device, stream));
  }
  // The device copy tagged `tag` (of `bytes` bytes) if there is one, else nullptr.
  const void* find(std::uint64_t tag, std::size_t bytes);
  void clear() noexcept;

 private:
  const void* find_or_add(const void* host, std::size_t bytes, int device, cudaStream_t stream);
  static constexpr std::size_t kCapacity = 64;
  struct Entry {
    std::unique_ptr<DeviceBuffer> buffer;
    std::uint64_t last_use = 0;
  };
  std::unordered_map<std::string, Entry> entries_;
  // Tag -> the entry holding that content (node pointers stay valid until the entry is erased).
  std::unordered_map<std::uint64_t, std::pair<const std::string*, Entry*>> by_tag_;
  std::uint64_t clock_ = 0;
  // The entry returned last: a call that asks for the same array again (the usual case: one
  // layer's scales, call after call) is answered with one memcmp, without building a key.
  const std::string* last_key_ = nullptr;
  Entry* last_ = nullptr;
};

}  // namespace qforge::cuda
