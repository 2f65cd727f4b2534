// Buffers and quantized tensors.
//
// A Buffer is a block of memory owned by one device: host memory for CPU backends, device
// memory for CUDA and Vulkan. Buffers never move by themselves; copies between devices are
// explicit (QuantizationOps::copy_to_device / copy_to_host). Buffers made by a plugin keep
// that plugin's library loaded: the registry never unloads a library it has loaded.
//
// A QuantizedTensor is packed storage (see dtype.h for the packing) plus its shape and
// validated params. Empty (0 elements) and one-element tensors are valid.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "qforge/dtype.h"
#include "qforge/export.h"
#include "qforge/params.h"
#include "qforge/shape.h"

namespace qforge {

struct DeviceRef {
  std::string backend = "host";  // plugin name, or "host"
  int index = 0;                 // device index within the plugin
  bool is_host() const { return backend == "host"; }
  friend bool operator==(const DeviceRef&, const DeviceRef&) = default;
};

class QFORGE_API Buffer {
 public:
  virtual ~Buffer();
  // Host pointer for host buffers, device pointer otherwise (never dereference those on the host).
  virtual void* data() noexcept = 0;
  virtual std::size_t size() const noexcept = 0;
  virtual DeviceRef device() const = 0;
  // True when data() may be read and written by host code.
  virtual bool host_accessible() const noexcept = 0;
};

// Zero-initialised host memory, 64-byte aligned.
QFORGE_API std::shared_ptr<Buffer> make_host_buffer(std::size_t bytes);

class QFORGE_API QuantizedTensor {
 public:
  // Allocates zeroed host storage. Validates params against shape.
  QuantizedTensor(Shape shape, QuantizationParams params);
  // Wraps existing storage (host or device); its size must be at least storage_bytes().
  QuantizedTensor(Shape shape, QuantizationParams params, std::shared_ptr<Buffer> storage);

  const Shape& shape() const noexcept { return shape_; }
  const QuantizationParams& params() const noexcept { return params_; }
  DType dtype() const noexcept { return params_.dtype(); }
  std::int64_t numel() const noexcept { return numel_; }
  std::size_t storage_bytes() const noexcept { return qforge::storage_bytes(dtype(), numel_); }
  DeviceRef device() const { return storage_->device(); }
  const std::shared_ptr<Buffer>& buffer() const noexcept { return storage_; }
  void* data() noexcept { return storage_->data(); }
  const void* data() const noexcept { return storage_->data(); }
  // Packed bytes; throws when the storage is not host-accessible.
  std::span<std::byte> bytes();
  std::span<const std::byte> bytes() const;
  // Element i as an integer (host storage only; slow, for tests and tools).
  std::int32_t at(std::int64_t i) const;
  void set(std::int64_t i, std::int32_t v);

 private:
  Shape shape_;
  QuantizationParams params_;
  std::int64_t numel_;
  std::shared_ptr<Buffer> storage_;
};

}  // namespace qforge
