#include "context.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "buffers.h"
#include "pipelines.h"
#include "qforge/error.h"
#include "vk_error.h"

namespace qforge::vulkan {
namespace {

constexpr std::uint32_t kSetsPerPool = 256;
constexpr std::uint32_t kBindingsPerSet = 8;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Stream

Stream::Stream(Context& ctx) : ctx_(ctx), commands_(std::make_unique<Commands>(ctx)) {}

// Commands first, then the scratch buffers its last submission used (it has completed: ops wait).
Stream::~Stream() { commands_.reset(); }

// ---------------------------------------------------------------------------------------------
// Context

Context::Context(std::shared_ptr<Instance> instance, const DeviceCaps& caps)
    : instance_(std::move(instance)), caps_(caps), device_caps_(caps) {
  if (!caps_.unusable_reason.empty()) throw Error(ErrorCode::unavailable, caps_.unusable_reason);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = caps_.compute_queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;

  // Enable exactly the features the shaders may use and the device has.
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.shaderInt8 = caps_.shader_int8;
  f12.storageBuffer8BitAccess = caps_.storage_buffer_8bit;
  // Only the cooperative-matrix shaders are written for the Vulkan memory model; enabling it
  // elsewhere would make the validation layer hold the other shaders' atomics to its rules.
  f12.vulkanMemoryModel = caps_.coopmat_nv;
  f12.vulkanMemoryModelDeviceScope = caps_.coopmat_nv;
  VkPhysicalDeviceShaderIntegerDotProductFeatures fdot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  fdot.shaderIntegerDotProduct = VK_TRUE;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV fcoop{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  fcoop.cooperativeMatrix = VK_TRUE;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.features.shaderInt64 = caps_.shader_int64;
  features.pNext = &f12;
  void** tail = &f12.pNext;
  std::vector<const char*> extensions;
  if (caps_.integer_dot_product) {
    *tail = &fdot;
    tail = &fdot.pNext;
    if (caps_.integer_dot_product_ext)
      extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  }
  if (caps_.coopmat_nv) {
    *tail = &fcoop;
    tail = &fcoop.pNext;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  // Compiler statistics of each pipeline (register count and the like) on request only:
  // drivers may skip their pipeline caches when asked to capture them.
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR fexec{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  const char* stats_env = std::getenv("QFORGE_VULKAN_PIPELINE_STATS");
  capture_stats_ = caps_.pipeline_executable_info && stats_env && *stats_env &&
                   std::string_view(stats_env) != "0";
  if (capture_stats_) {
    fexec.pipelineExecutableInfo = VK_TRUE;
    *tail = &fexec;
    tail = &fexec.pNext;
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  }

  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &features;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  check(vkCreateDevice(caps_.physical, &info, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, caps_.compute_queue_family, 0, &queue_);
  vkGetPhysicalDeviceMemoryProperties(caps_.physical, &memory_);
  try {
    pipelines_ = std::make_unique<PipelineCache>(*this);
    stream_ = std::make_unique<Stream>(*this);
  } catch (...) {
    stream_.reset();
    pipelines_.reset();
    vkDestroyDevice(device_, nullptr);
    throw;
  }
}

Context::~Context() {
  if (device_ != VK_NULL_HANDLE) vkDeviceWaitIdle(device_);
  stream_.reset();
  pipelines_.reset();
  if (device_ != VK_NULL_HANDLE) vkDestroyDevice(device_, nullptr);
}

std::uint32_t Context::memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                   VkMemoryPropertyFlags preferred) const {
  std::uint32_t fallback = UINT32_MAX;
  for (std::uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    if ((f & preferred) == preferred) return i;
    if (fallback == UINT32_MAX) fallback = i;
  }
  if (fallback == UINT32_MAX)
    throw Error(ErrorCode::unsupported,
                "vulkan: device '" + caps_.name + "' has no memory type with flags 0x" +
                    std::to_string(required) + " among types 0x" + std::to_string(type_bits));
  return fallback;
}

VkMemoryPropertyFlags Context::memory_flags(std::uint32_t type) const {
  return memory_.memoryTypes[type].propertyFlags;
}

void Context::limit(std::uint64_t storage_range, std::uint32_t workgroups) {
  caps_.max_storage_buffer_range =
      storage_range ? std::min(storage_range, device_caps_.max_storage_buffer_range)
                    : device_caps_.max_storage_buffer_range;
  for (int i = 0; i < 3; ++i)
    caps_.max_workgroup_count[i] = workgroups
                                       ? std::min(workgroups, device_caps_.max_workgroup_count[i])
                                       : device_caps_.max_workgroup_count[i];
}

void Context::check_validation(const char* where) {
  auto errors = instance_->take_validation_errors();
  if (errors.empty()) return;
  std::string text = std::string(where) + ": " + std::to_string(errors.size()) +
                     " Vulkan validation error(s); expected none. First: " + errors.front();
  throw Error(ErrorCode::backend, text);
}

// ---------------------------------------------------------------------------------------------
// Commands

Commands::Commands(Context& ctx) : ctx_(ctx) {
  VkDevice dev = ctx_.device();
  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = ctx_.caps().compute_queue_family;
  check(vkCreateCommandPool(dev, &pool, nullptr, &pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(dev, &alloc, &cmd_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(dev, &fence, nullptr, &fence_), "vkCreateFence");
  if (ctx_.caps().timestamp_valid_bits > 0) {
    VkQueryPoolCreateInfo q{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    q.queryType = VK_QUERY_TYPE_TIMESTAMP;
    q.queryCount = 2;
    check(vkCreateQueryPool(dev, &q, nullptr, &queries_), "vkCreateQueryPool");
  }
}

Commands::~Commands() {
  VkDevice dev = ctx_.device();
  for (VkDescriptorPool p : descriptor_pools_) vkDestroyDescriptorPool(dev, p, nullptr);
  if (queries_ != VK_NULL_HANDLE) vkDestroyQueryPool(dev, queries_, nullptr);
  if (fence_ != VK_NULL_HANDLE) vkDestroyFence(dev, fence_, nullptr);
  if (pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(dev, pool_, nullptr);
}

void Commands::begin() {
  VkDevice dev = ctx_.device();
  if (recording_) {
    // An earlier op threw while recording: drop what it recorded.
    recording_ = false;
  }
  check(vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer");
  for (VkDescriptorPool p : descriptor_pools_)
    check(vkResetDescriptorPool(dev, p, 0), "vkResetDescriptorPool");
  current_pool_ = 0;
  dispatches_ = 0;
  last_pipeline_ = nullptr;
  VkCommandBufferBeginInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cmd_, &info), "vkBeginCommandBuffer");
  recording_ = true;
  if (queries_ != VK_NULL_HANDLE) {
    vkCmdResetQueryPool(cmd_, queries_, 0, 2);
    vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 0);
  }
  // Submission order alone orders commands but does not make one submission's writes visible to
  // the next: a barrier from everything before (host writes to mapped memory included).
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                       VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &b, 0, nullptr, 0, nullptr);
}

void Commands::barrier() {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cmd_, stages, stages, 0, 1, &b, 0, nullptr, 0, nullptr);
}

void Commands::copy(VkBuffer src, VkDeviceSize src_offset, VkBuffer dst, VkDeviceSize dst_offset,
                    VkDeviceSize bytes) {
  if (bytes == 0) return;
  VkBufferCopy region{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(cmd_, src, dst, 1, &region);
}

void Commands::fill(VkBuffer dst, VkDeviceSize offset, VkDeviceSize bytes, std::uint32_t value) {
  if (bytes == 0) return;
  vkCmdFillBuffer(cmd_, dst, offset, bytes, value);
}

VkDescriptorSet Commands::allocate_set(VkDescriptorSetLayout layout) {
  VkDevice dev = ctx_.device();
  for (;;) {
    if (current_pool_ == descriptor_pools_.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kBindingsPerSet};
      VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      info.maxSets = kSetsPerPool;
      info.poolSizeCount = 1;
      info.pPoolSizes = &size;
      VkDescriptorPool pool = VK_NULL_HANDLE;
      check(vkCreateDescriptorPool(dev, &info, nullptr, &pool), "vkCreateDescriptorPool");
      descriptor_pools_.push_back(pool);
    }
    VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    alloc.descriptorPool = descriptor_pools_[current_pool_];
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    const VkResult r = vkAllocateDescriptorSets(dev, &alloc, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      check(r, "vkAllocateDescriptorSets");
    ++current_pool_;  // this pool is full for this submission: move to the next one
  }
}

void Commands::dispatch(const Pipeline& p, std::span<const BufferBinding> bindings,
                        const void* push, std::uint32_t push_bytes, std::uint32_t gx,
                        std::uint32_t gy, std::uint32_t gz) {
  if (bindings.size() != p.bindings)
    throw Error(ErrorCode::internal, "vulkan: pipeline " + p.name + " takes " +
                                         std::to_string(p.bindings) + " bindings, given " +
                                         std::to_string(bindings.size()));
  if (push_bytes != p.push_bytes)
    throw Error(ErrorCode::internal,
                "vulkan: pipeline " + p.name + " takes " + std::to_string(p.push_bytes) +
                    " push-constant bytes, given " + std::to_string(push_bytes));
  if (gx == 0 || gy == 0 || gz == 0) return;
  const auto& caps = ctx_.caps();
  if (gx > caps.max_workgroup_count[0] || gy > caps.max_workgroup_count[1] ||
      gz > caps.max_workgroup_count[2])
    throw Error(ErrorCode::internal, "vulkan: dispatch of " + std::to_string(gx) + "x" +
                                         std::to_string(gy) + "x" + std::to_string(gz) +
                                         " workgroups exceeds the device limit; the op should "
                                         "have split it");
  VkDescriptorSet set = allocate_set(p.set_layout);
  std::vector<VkDescriptorBufferInfo> infos(bindings.size());
  std::vector<VkWriteDescriptorSet> writes(bindings.size());
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    if (bindings[i].range > caps.max_storage_buffer_range)
      throw Error(ErrorCode::internal, "vulkan: binding " + std::to_string(i) + " of " + p.name +
                                           " spans " + std::to_string(bindings[i].range) +
                                           " bytes, over maxStorageBufferRange " +
                                           std::to_string(caps.max_storage_buffer_range) +
                                           "; the op should have split it");
    infos[i] = {bindings[i].buffer, bindings[i].offset, bindings[i].range};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<std::uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(ctx_.device(), static_cast<std::uint32_t>(writes.size()), writes.data(), 0,
                         nullptr);
  vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  if (push_bytes > 0)
    vkCmdPushConstants(cmd_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
  vkCmdDispatch(cmd_, gx, gy, gz);
  ++dispatches_;
  last_pipeline_ = &p;
}

double Commands::submit() {
  // Device writes become visible to the host (mapped readback and params) once the fence signals.
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                       &b, 0, nullptr, 0, nullptr);
  if (queries_ != VK_NULL_HANDLE)
    vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 1);
  recording_ = false;
  check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.commandBufferCount = 1;
  info.pCommandBuffers = &cmd_;
  VkDevice dev = ctx_.device();
  check(vkResetFences(dev, 1, &fence_), "vkResetFences");
  {
    std::lock_guard lock(ctx_.queue_mutex());
    check(vkQueueSubmit(ctx_.queue(), 1, &info, fence_), "vkQueueSubmit");
  }
  check(vkWaitForFences(dev, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  ctx_.check_validation("vkQueueSubmit");
  if (queries_ == VK_NULL_HANDLE) return 0.0;
  std::uint64_t stamps[2] = {0, 0};
  check(vkGetQueryPoolResults(dev, queries_, 0, 2, sizeof stamps, stamps, sizeof(std::uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  const std::uint32_t bits = ctx_.caps().timestamp_valid_bits;
  const std::uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
  const std::uint64_t ticks = (stamps[1] - stamps[0]) & mask;
  return static_cast<double>(ticks) * ctx_.caps().timestamp_period_ns;
}

}  // namespace qforge::vulkan
