#include "buffers.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "context.h"
#include "qforge/error.h"
#include "vk_error.h"

namespace qforge::vulkan {
namespace {

// Non-canonical on x86-64 (48- and 57-bit) and AArch64: never a valid host pointer.
constexpr std::uintptr_t kAddressBase = 0x4000'0000'0000'0000ull;
constexpr std::uintptr_t kAddressGap = 1ull << 20;

// Process-wide map of live VulkanBuffers by their first address. Buffers of every plugin object
// share one address range so a pointer can never name two buffers.
struct AddressSpace {
  std::mutex mutex;
  std::uintptr_t next = kAddressBase;
  std::map<std::uintptr_t, VulkanBuffer*> live;
};

AddressSpace& address_space() {
  static AddressSpace* space = new AddressSpace();  // never destroyed: buffers may outlive statics
  return *space;
}

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

constexpr VkDeviceSize round_up(VkDeviceSize v, VkDeviceSize m) { return (v + m - 1) / m * m; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// DeviceBuffer

DeviceBuffer::DeviceBuffer(Context& ctx, VkDeviceSize bytes, MemoryKind kind) : ctx_(ctx) {
  // A multiple of 16: shaders read and write whole 32-bit words, and a word written for the
  // last byte of a tensor must stay inside the allocation.
  size_ = std::max<VkDeviceSize>(16, round_up(bytes, 16));
  const auto& caps = ctx.caps();
  if (size_ > caps.max_buffer_size || size_ > caps.max_allocation)
    throw Error(ErrorCode::unsupported,
                "vulkan: a buffer of " + std::to_string(bytes) + " bytes exceeds device '" +
                    caps.name + "' limits (maxBufferSize " + std::to_string(caps.max_buffer_size) +
                    ", maxMemoryAllocationSize " + std::to_string(caps.max_allocation) +
                    "); expected smaller buffers");
  VkDevice dev = ctx.device();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size_;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(dev, &info, nullptr, &buffer_), "vkCreateBuffer");

  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(dev, buffer_, &req);
  VkMemoryPropertyFlags required = 0, preferred = 0;
  const VkMemoryPropertyFlags host =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  switch (kind) {
    case MemoryKind::device: preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT; break;
    case MemoryKind::upload: required = host; break;
    case MemoryKind::readback:
      required = host;
      preferred = host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      break;
  }
  std::uint32_t type = 0;
  try {
    type = ctx.memory_type(req.memoryTypeBits, required, preferred);
  } catch (...) {
    vkDestroyBuffer(dev, buffer_, nullptr);
    throw;
  }
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  if (VkResult r = vkAllocateMemory(dev, &alloc, nullptr, &memory_); r != VK_SUCCESS) {
    vkDestroyBuffer(dev, buffer_, nullptr);
    check(r, "vkAllocateMemory(" + std::to_string(req.size) + " bytes)");
  }
  VkResult r = vkBindBufferMemory(dev, buffer_, memory_, 0);
  const VkMemoryPropertyFlags flags = ctx.memory_flags(type);
  void* mapped = nullptr;
  if (r == VK_SUCCESS && (flags & host) == host)
    r = vkMapMemory(dev, memory_, 0, VK_WHOLE_SIZE, 0, &mapped);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(dev, buffer_, nullptr);
    vkFreeMemory(dev, memory_, nullptr);
    check(r, "vkBindBufferMemory/vkMapMemory");
  }
  mapped_ = static_cast<std::byte*>(mapped);
}

DeviceBuffer::~DeviceBuffer() {
  VkDevice dev = ctx_.device();
  vkDestroyBuffer(dev, buffer_, nullptr);
  if (mapped_) vkUnmapMemory(dev, memory_);
  vkFreeMemory(dev, memory_, nullptr);
}

// ---------------------------------------------------------------------------------------------
// VulkanBuffer

VulkanBuffer::VulkanBuffer(std::shared_ptr<Context> ctx, std::size_t bytes)
    : ctx_(std::move(ctx)), bytes_(bytes), storage_(*ctx_, bytes, MemoryKind::device) {
  auto& space = address_space();
  std::lock_guard lock(space.mutex);
  address_ = space.next;
  space.next += round_up(std::max<std::size_t>(bytes, 1), kAddressGap) + kAddressGap;
  space.live.emplace(address_, this);
}

VulkanBuffer::~VulkanBuffer() {
  auto& space = address_space();
  std::lock_guard lock(space.mutex);
  space.live.erase(address_);
}

DeviceRef VulkanBuffer::device() const { return {"vulkan", ctx_->caps().index}; }

Resolved resolve(const Context& ctx, const void* p, std::size_t bytes, std::string_view what) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  auto& space = address_space();
  std::lock_guard lock(space.mutex);
  auto it = space.live.upper_bound(addr);
  VulkanBuffer* buf = nullptr;
  if (it != space.live.begin()) {
    --it;
    buf = it->second;
    if (addr - it->first > buf->size()) buf = nullptr;
  }
  if (buf == nullptr)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": pointer " + hex(p) +
                    " is not inside a live buffer of the vulkan plugin; expected device memory "
                    "from allocate() (host pointers cannot be passed to a device backend)");
  const std::uintptr_t offset = addr - reinterpret_cast<std::uintptr_t>(buf->data());
  if (bytes > buf->size() - offset)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(offset) + " of a " + std::to_string(buf->size()) +
                    "-byte buffer; expected the range to lie inside the buffer");
  if (buf->context().get() != &ctx)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": the buffer belongs to vulkan device " +
                    std::to_string(buf->context()->caps().index) + " but the op runs on device " +
                    std::to_string(ctx.caps().index) + "; expected memory of the selected device");
  return {&buf->storage(), offset};
}

VulkanBuffer& vulkan_buffer(const Context& ctx, Buffer& b, std::string_view what) {
  auto* vb = dynamic_cast<VulkanBuffer*>(&b);
  if (vb == nullptr)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": buffer lives on " + b.device().backend +
                    "; expected a buffer allocated by the vulkan plugin");
  if (vb->context().get() != &ctx)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": buffer belongs to vulkan device " +
                    std::to_string(vb->context()->caps().index) + "; expected device " +
                    std::to_string(ctx.caps().index));
  return *vb;
}

DeviceBuffer& scratch(Stream& st, std::string_view name, VkDeviceSize bytes, MemoryKind kind) {
  Context& ctx = st.context();
  auto& all = st.scratch_buffers();
  auto it = all.find(name);
  if (it != all.end() && it->second->size() >= bytes) return *it->second;
  // Grow by at least half again, so a slowly growing size does not reallocate every call.
  VkDeviceSize size = bytes;
  if (it != all.end()) {
    size = std::max(bytes, it->second->size() + it->second->size() / 2);
    size = std::min(size, std::min(ctx.caps().max_buffer_size, ctx.caps().max_allocation));
    size = std::max(size, bytes);
    it->second.reset();
  }
  auto buf = std::make_unique<DeviceBuffer>(ctx, size, kind);
  DeviceBuffer& ref = *buf;
  all[std::string(name)] = std::move(buf);
  return ref;
}

namespace {

// Staging chunk: large enough to keep the copy engine busy, small enough for any device.
constexpr VkDeviceSize kStagingBytes = 32ull << 20;

}  // namespace

void upload(Stream& st, DeviceBuffer& dst, VkDeviceSize offset, const void* src,
            std::size_t bytes) {
  if (bytes == 0) return;
  if (dst.mapped()) {
    std::memcpy(dst.mapped() + offset, src, bytes);
    return;
  }
  DeviceBuffer& staging = scratch(st, "staging_upload",
                                  std::min<VkDeviceSize>(bytes, kStagingBytes), MemoryKind::upload);
  const auto* from = static_cast<const std::byte*>(src);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min<std::size_t>(bytes - done, staging.size());
    std::memcpy(staging.mapped(), from + done, n);
    Commands& cmd = st.commands();
    cmd.begin();
    cmd.copy(staging.handle(), 0, dst.handle(), offset + done, n);
    cmd.submit();
    done += n;
  }
}

void download(Stream& st, void* dst, DeviceBuffer& src, VkDeviceSize offset, std::size_t bytes) {
  if (bytes == 0) return;
  if (src.mapped()) {
    std::memcpy(dst, src.mapped() + offset, bytes);
    return;
  }
  DeviceBuffer& staging = scratch(
      st, "staging_readback", std::min<VkDeviceSize>(bytes, kStagingBytes), MemoryKind::readback);
  auto* to = static_cast<std::byte*>(dst);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min<std::size_t>(bytes - done, staging.size());
    Commands& cmd = st.commands();
    cmd.begin();
    cmd.copy(src.handle(), offset + done, staging.handle(), 0, n);
    cmd.submit();
    std::memcpy(to + done, staging.mapped(), n);
    done += n;
  }
}

}  // namespace qforge::vulkan
