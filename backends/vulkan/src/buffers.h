// Device memory: RAII buffers, the buffers the plugin hands out (VulkanBuffer), the map from the
// opaque pointers ops receive back to (VkBuffer, offset), scratch buffers and staging copies.
//
// Pointers. Buffer::data() of a VulkanBuffer is not a host address: it is an opaque handle in a
// range no host pointer can take (non-canonical x86-64 / AArch64 addresses from
// 0x4000'0000'0000'0000 up), one range per buffer with a gap after it. Ops accept any pointer
// inside a buffer (data() + offset), as CUDA backends accept device pointers, and map it back
// with resolve(). Dereferencing it on the host faults; host code moves data with
// copy_to_device / copy_to_host.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "qforge/tensor.h"

namespace qforge::vulkan {

class Context;
class Stream;

enum class MemoryKind {
  device,    // device-local preferred; mapped too when it happens to be host-visible and coherent
  upload,    // host-visible, coherent (staging towards the device, per-op parameters)
  readback,  // host-visible, coherent, cached preferred (staging towards the host)
};

class DeviceBuffer {
 public:
  // Allocates at least `bytes` (rounded up to 16, at least 16) with storage and transfer usage.
  DeviceBuffer(Context& ctx, VkDeviceSize bytes, MemoryKind kind);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  VkBuffer handle() const noexcept { return buffer_; }
  VkDeviceSize size() const noexcept { return size_; }
  std::byte* mapped() const noexcept { return mapped_; }  // null unless host-visible
  Context& context() const noexcept { return ctx_; }

 private:
  Context& ctx_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceSize size_ = 0;
  std::byte* mapped_ = nullptr;
};

// The Buffer that QuantizationOps::allocate returns.
class VulkanBuffer final : public Buffer {
 public:
  VulkanBuffer(std::shared_ptr<Context> ctx, std::size_t bytes);
  ~VulkanBuffer() override;

  void* data() noexcept override { return reinterpret_cast<void*>(address_); }
  std::size_t size() const noexcept override { return bytes_; }
  DeviceRef device() const override;
  bool host_accessible() const noexcept override { return false; }

  DeviceBuffer& storage() noexcept { return storage_; }
  const std::shared_ptr<Context>& context() const noexcept { return ctx_; }

 private:
  std::shared_ptr<Context> ctx_;
  std::size_t bytes_;
  DeviceBuffer storage_;
  std::uintptr_t address_ = 0;
};

// Where an op pointer lives.
struct Resolved {
  DeviceBuffer* buffer = nullptr;
  VkDeviceSize offset = 0;  // bytes from the start of the buffer
};

// Maps p (with `bytes` bytes after it) back to its buffer, which must belong to `ctx`. Throws
// invalid_argument naming `what` when p is not inside a live buffer of this plugin, the span
// runs past its end, or it belongs to another device.
Resolved resolve(const Context& ctx, const void* p, std::size_t bytes, std::string_view what);

// The VulkanBuffer behind a Buffer of this plugin, or invalid_argument naming `what`.
VulkanBuffer& vulkan_buffer(const Context& ctx, Buffer& b, std::string_view what);

// A buffer of the context kept between ops (packed operands, sums, parameters, staging), grown
// to at least `bytes` when needed. Its content is undefined on return.
DeviceBuffer& scratch(Stream& st, std::string_view name, VkDeviceSize bytes, MemoryKind kind);

// Host <-> device copies through a staging buffer (or a direct memcpy where the buffer is mapped).
void upload(Stream& st, DeviceBuffer& dst, VkDeviceSize offset, const void* src, std::size_t bytes);
void download(Stream& st, void* dst, DeviceBuffer& src, VkDeviceSize offset, std::size_t bytes);

}  // namespace qforge::vulkan
